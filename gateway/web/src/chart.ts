// History charts from GET /api/v1/sensors/{id}/readings/aggregate (docs/api-decisions.md,
// "Aggregates"): the mean as a line, the min-max range as a band, and a gap (no line across)
// wherever a bucket has no readings (count or coverage 0). A bucket whose suspect or failed
// values the aggregate left out (qc=good, docs/quality.md) gets a marker.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { series, type Bucket } from "./buckets";

export { rangeQuery, type Bucket } from "./buckets";

export class Chart {
  private plot: uPlot | null = null;

  constructor(private box: HTMLElement) {}

  show(buckets: Bucket[], parameter: string, unit: string): void {
    const { data, gaps, flagged, excluded } = series(buckets, parameter);
    this.box.dataset.buckets = String(data[0].length);
    this.box.dataset.gaps = String(gaps);
    this.box.dataset.flagged = String(flagged);
    this.box.dataset.excluded = String(excluded);
    this.box.dataset.parameter = parameter;
    const width = Math.max(240, this.box.clientWidth || 320);
    const opts: uPlot.Options = {
      width,
      height: 200,
      series: [
        {},
        { label: `mean (${unit})`, stroke: "#0072B2", width: 2, spanGaps: false },
        { label: "min", stroke: "#56B4E9", width: 1, dash: [4, 3], spanGaps: false },
        { label: "max", stroke: "#56B4E9", width: 1, dash: [4, 3], spanGaps: false },
        {
          label: "suspect/failed left out",
          stroke: "#D55E00",
          width: 0,
          paths: () => null,
          points: { show: true, size: 9, stroke: "#D55E00", fill: "#D55E00" },
        },
      ],
      bands: [{ series: [3, 2], fill: "rgba(86,180,233,0.25)" }],
      axes: [{}, { label: unit, size: 56 }],
      // The y range follows the data (uPlot's default starts at 0 for positive values,
      // which flattens 1,013 hPa into a line).
      scales: { x: { time: true }, y: { range: (_u, min, max) => padRange(min, max) } },
      legend: { live: true },
    };
    this.plot?.destroy();
    this.plot = new uPlot(opts, data, this.box);
    // Read by the browser tests: what the chart holds, not what the API sent.
    const held = this.plot.data;
    this.box.dataset.points = String(held[0].length);
    this.box.dataset.nulls = String((held[1] as (number | null)[]).filter((v) => v === null || v === undefined).length);
  }

  resize(): void {
    if (this.plot) this.plot.setSize({ width: Math.max(240, this.box.clientWidth), height: 200 });
  }

  clear(): void {
    this.plot?.destroy();
    this.plot = null;
    delete this.box.dataset.buckets;
    delete this.box.dataset.points;
  }
}

/** padRange is the y range of the data with a tenth of its span added on each side. */
function padRange(min: number | null, max: number | null): [number, number] {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  const pad = max > min ? (max - min) * 0.1 : Math.max(Math.abs(max) * 0.01, 0.5);
  return [min - pad, max + pad];
}
