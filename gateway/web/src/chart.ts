// History charts from GET /api/v1/sensors/{id}/readings/aggregate (docs/api-decisions.md,
// "Aggregates"): the mean as a line, the min-max range as a band, and a gap (no line across)
// wherever a bucket has no readings (count or coverage 0).
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { Range } from "./state";

export interface BucketStats {
  mean?: number | null;
  min?: number | null;
  max?: number | null;
  count?: number | null;
  coverage?: number | null;
}

export interface Bucket {
  start: string;
  end?: string;
  values?: Record<string, BucketStats>;
}

/** The interval and span of each range: at most 365 buckets, far below the 1000 limit. */
export const rangeQuery: Record<Range, { interval: string; days: number }> = {
  "24h": { interval: "1h", days: 1 },
  "7d": { interval: "3h", days: 7 },
  "30d": { interval: "6h", days: 30 },
  "1y": { interval: "1d", days: 365 },
};

/** series turns buckets into uPlot's aligned columns: time, mean, min, max; null where a
 * bucket is empty, so uPlot leaves a gap. */
export function series(buckets: Bucket[], parameter: string): { data: uPlot.AlignedData; gaps: number } {
  const xs: number[] = [];
  const mean: (number | null)[] = [];
  const min: (number | null)[] = [];
  const max: (number | null)[] = [];
  let gaps = 0;
  for (const b of buckets) {
    const s = b.values?.[parameter];
    const empty = !s || s.count === 0 || s.coverage === 0 || s.mean === null || s.mean === undefined;
    xs.push(Date.parse(b.start) / 1000);
    mean.push(empty ? null : s.mean!);
    min.push(empty ? null : (s.min ?? s.mean!));
    max.push(empty ? null : (s.max ?? s.mean!));
    if (empty) gaps++;
  }
  return { data: [xs, mean, min, max], gaps };
}

export class Chart {
  private plot: uPlot | null = null;

  constructor(private box: HTMLElement) {}

  show(buckets: Bucket[], parameter: string, unit: string): void {
    const { data, gaps } = series(buckets, parameter);
    this.box.dataset.buckets = String(data[0].length);
    this.box.dataset.gaps = String(gaps);
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
      ],
      bands: [{ series: [3, 2], fill: "rgba(86,180,233,0.25)" }],
      axes: [{}, { label: unit, size: 56 }],
      scales: { x: { time: true } },
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
