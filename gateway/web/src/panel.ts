// The sensor panel: who the sensor is, its latest measurements (canonical units, with the
// original value and unit on hover: lineage), age and stale flag, the history chart, the
// raw payload and a download of the chosen range (CSV, Parquet, NetCDF).
import {
  ApiError,
  firstArray,
  getJSON,
  measurementsOf,
  missing,
  qs,
  request,
  type AreaItem,
  type Measurement,
  type Reading,
  type Sensor,
} from "./api";
import { Chart, rangeQuery, type Bucket } from "./chart";
import { age, csvField, el, lonlat, num, secondsSince } from "./format";
import { ranges, type Range } from "./state";

interface LatestAnswer {
  sensor_id?: string;
  external_id?: string;
  name?: string;
  service_id?: string;
  reading: Reading;
}

export interface PanelOptions {
  range: Range;
  chartParam: string;
  onRange: (r: Range, param: string) => void;
}

const enc = encodeURIComponent;

export class Panel {
  private id = "";
  private sensor: Sensor | null = null;
  private area: AreaItem | null = null;
  private latest: Reading | null = null;
  private chart: Chart | null = null;
  private chartBox: HTMLElement | null = null;
  private ageTimer = 0;
  private seq = 0;

  constructor(
    private root: HTMLElement,
    private opts: PanelOptions,
  ) {
    window.addEventListener("resize", () => this.chart?.resize());
  }

  get current(): string {
    return this.id;
  }

  clear(): void {
    this.id = "";
    this.root.replaceChildren(el("p", { class: "hint", text: "Choose a sensor on the map or in the table." }));
    this.root.dataset.sensor = "";
  }

  /** show loads sensor id; area is its item of area latest when the page has one. */
  async show(id: string, area: AreaItem | null, focus: boolean): Promise<void> {
    const seq = ++this.seq;
    this.id = id;
    this.area = area;
    this.root.dataset.sensor = id;
    this.root.replaceChildren(el("p", { class: "hint", text: "Loading…" }));
    let sensor: Sensor;
    try {
      sensor = await getJSON<Sensor>(`/api/v1/sensors/${enc(id)}`);
    } catch (err) {
      if (seq === this.seq) this.root.replaceChildren(el("p", { class: "error", role: "alert", text: `Sensor ${id}: ${(err as Error).message}` }));
      return;
    }
    if (seq !== this.seq) return;
    this.sensor = sensor;
    this.render();
    if (focus) this.root.querySelector<HTMLElement>("h2")?.focus();
    await Promise.all([this.loadLatest(), this.loadChart()]);
  }

  /** updateArea takes a fresher area-latest item of the shown sensor (age, stale flag). */
  updateArea(item: AreaItem): void {
    this.area = item;
    this.renderAge();
  }

  /** takeReading shows a reading that arrived live, when it is newer than the one shown. */
  takeReading(r: Reading): void {
    if (this.latest && Date.parse(r.timestamp) <= Date.parse(this.latest.timestamp)) return;
    this.latest = r;
    this.renderLatest();
    this.root.querySelector(".latest")?.classList.add("flash");
  }

  async loadLatest(): Promise<void> {
    const id = this.id;
    const box = this.root.querySelector<HTMLElement>(".latest");
    if (!box) return;
    try {
      const ans = await this.latestAnswer(id, true);
      if (id !== this.id) return;
      this.latest = ans.reading;
    } catch (err) {
      if (id !== this.id) return;
      this.latest = null;
      box.replaceChildren(
        el("p", {
          class: "note",
          text: err instanceof ApiError && err.status === 404 ? "No readings yet." : `Latest reading: ${(err as Error).message}`,
        }),
      );
      this.renderAge();
      return;
    }
    this.renderLatest();
  }

  /** latestAnswer asks for the latest reading with lineage, and without it when this
   * gateway does not know the parameter yet. */
  private async latestAnswer(id: string, lineage: boolean): Promise<LatestAnswer> {
    try {
      return await getJSON<LatestAnswer>(`/api/v1/sensors/${enc(id)}/readings/latest${lineage ? "?lineage=true" : ""}`);
    } catch (err) {
      if (lineage && err instanceof ApiError && err.status === 400) return this.latestAnswer(id, false);
      throw err;
    }
  }

  private render(): void {
    const s = this.sensor!;
    const rangeButtons = ranges.map((r) =>
      el("button", { type: "button", "data-range": r, "aria-pressed": String(r === this.opts.range) }, r),
    );
    const params = s.data_types ?? [];
    const paramSelect = el("select", { id: "chart-param", "aria-label": "Parameter charted" });
    for (const p of params) paramSelect.append(el("option", { value: p }, p));
    if (this.opts.chartParam && params.includes(this.opts.chartParam)) paramSelect.value = this.opts.chartParam;
    this.chartBox = el("div", { class: "chart", id: "chart" });
    this.chart = new Chart(this.chartBox);
    const rawButton = el("button", { type: "button", id: "raw-toggle", "aria-pressed": "false", "aria-controls": "raw" }, "Show raw payload");
    const raw = el("pre", { id: "raw", class: "raw", hidden: "" });
    const csv = el("button", { type: "button", id: "csv" }, "Download CSV");
    const csvNote = el("span", { class: "note", id: "csv-status", role: "status" });
    // The science formats come from the export alone (docs/formats.md): files that
    // notebooks open directly (pandas/DuckDB for Parquet, xarray for NetCDF-CF).
    const parquet = el("button", { type: "button", id: "download-parquet", title: "Parquet: typed columns for pandas, DuckDB, Arrow" }, "Parquet");
    const netcdf = el("button", { type: "button", id: "download-netcdf", title: "NetCDF-CF time series with QARTOD flags for xarray, Panoply" }, "NetCDF");

    this.root.replaceChildren(
      el("h2", { tabindex: "-1", id: "panel-title" }, s.name || s.id),
      el(
        "dl",
        { class: "facts" },
        el("dt", {}, "Provider"),
        el("dd", {}, s.provider_name || s.provider_slug || "unknown"),
        el("dt", {}, "Type"),
        el("dd", {}, [s.sensor_type, s.status].filter(Boolean).join(", ") || "unknown"),
        el("dt", {}, "Service"),
        el("dd", {}, s.connected_service || "none"),
        el("dt", {}, "Location"),
        el("dd", {}, lonlat(s.latitude, s.longitude)),
        el("dt", {}, "Ids"),
        el("dd", { class: "ids" }, `${s.external_id ?? ""} · ${s.id}`),
      ),
      el("p", { class: "age", id: "age" }),
      el("div", { class: "latest", "aria-live": "polite" }, el("p", { class: "note", text: "Loading latest reading…" })),
      el("div", { class: "row" }, rawButton),
      raw,
      el("h3", {}, "History"),
      el("div", { class: "row", role: "group", "aria-label": "Range" }, ...rangeButtons, paramSelect),
      this.chartBox,
      el("p", { class: "note", id: "chart-note" }),
      el("div", { class: "row", role: "group", "aria-label": "Download" }, csv, parquet, netcdf, csvNote),
    );
    for (const b of rangeButtons) {
      b.addEventListener("click", () => {
        this.opts.range = b.dataset.range as Range;
        for (const o of rangeButtons) o.setAttribute("aria-pressed", String(o === b));
        this.opts.onRange(this.opts.range, paramSelect.value);
        void this.loadChart();
      });
    }
    paramSelect.addEventListener("change", () => {
      this.opts.chartParam = paramSelect.value;
      this.opts.onRange(this.opts.range, paramSelect.value);
      void this.loadChart();
    });
    rawButton.addEventListener("click", () => void this.toggleRaw(rawButton, raw));
    csv.addEventListener("click", () => void this.downloadCSV(csvNote));
    parquet.addEventListener("click", () => void this.downloadExport("parquet", csvNote));
    netcdf.addEventListener("click", () => void this.downloadExport("netcdf", csvNote));
    this.renderAge();
  }

  private renderLatest(): void {
    const box = this.root.querySelector<HTMLElement>(".latest");
    const r = this.latest;
    if (!box || !r) return;
    const rows = measurementsOf(r.measurements).map((m) => {
      const value = el("td", { class: "value", title: lineage(m), "data-parameter": m.parameter, "data-value": String(m.value) });
      value.append(el("span", {}, `${num(m.value)} ${m.unit ?? ""}`));
      if (lineage(m)) value.append(el("span", { class: "sr-only" }, ` (${lineage(m)})`));
      if (m.qc && (m.qc.flag === 3 || m.qc.flag === 4)) {
        const word = m.qc.flag === 4 ? "failed" : "suspect";
        value.dataset.qc = String(m.qc.flag);
        value.append(el("span", { class: `qc qc-${m.qc.flag}`, title: m.qc.failed.join(", ") }, ` ${word}`));
      }
      return el("tr", {}, el("th", { scope: "row" }, m.parameter), value);
    });
    box.replaceChildren(
      el(
        "table",
        { class: "values" },
        el("caption", {}, "Latest measurements"),
        el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Parameter"), el("th", { scope: "col" }, "Value (original on hover)"))),
        el("tbody", {}, ...rows),
      ),
    );
    this.renderAge();
  }

  private renderAge(): void {
    const p = this.root.querySelector<HTMLElement>("#age");
    if (!p) return;
    clearTimeout(this.ageTimer);
    const ts = this.latest?.timestamp ?? this.area?.timestamp ?? null;
    const secs = secondsSince(ts);
    p.replaceChildren();
    if (!ts) {
      p.append("Never reported");
    } else {
      const t = el("time", { id: "latest-time", datetime: ts, "data-ts": ts }, new Date(ts).toISOString().replace(".000Z", "Z"));
      p.append("Latest reading ", el("strong", {}, age(secs) + " ago"), " (", t, ")");
    }
    if (this.area?.unavailable) p.append(" ", el("span", { class: "badge unavailable" }, "service unavailable"));
    else if (this.area?.stale === true) p.append(" ", el("span", { class: "badge stale", id: "stale-flag" }, "stale"));
    else if (this.area?.stale === false) p.append(" ", el("span", { class: "badge fresh" }, "fresh"));
    this.ageTimer = window.setTimeout(() => this.renderAge(), 10000);
  }

  private async toggleRaw(button: HTMLButtonElement, pre: HTMLElement): Promise<void> {
    const open = button.getAttribute("aria-pressed") !== "true";
    button.setAttribute("aria-pressed", String(open));
    button.textContent = open ? "Hide raw payload" : "Show raw payload";
    pre.hidden = !open;
    if (!open) return;
    pre.textContent = "Loading…";
    try {
      const ans = await getJSON<LatestAnswer>(`/api/v1/sensors/${enc(this.id)}/readings/latest?data_format=raw`);
      const r = ans.reading ?? {};
      pre.textContent = JSON.stringify({ source_format: r.source_format, raw: r.raw }, null, 2);
    } catch (err) {
      pre.textContent = `Raw payload: ${(err as Error).message}`;
    }
  }

  private async loadChart(): Promise<void> {
    const id = this.id;
    const note = this.root.querySelector<HTMLElement>("#chart-note");
    const select = this.root.querySelector<HTMLSelectElement>("#chart-param");
    if (!this.chart || !this.chartBox || !note || !select) return;
    const parameter = select.value;
    if (!parameter) {
      note.textContent = "This sensor lists no parameters to chart.";
      this.chartBox.hidden = true;
      return;
    }
    const { interval, days } = rangeQuery[this.opts.range];
    note.textContent = "Loading history…";
    let buckets: Bucket[];
    try {
      const body = await getJSON<unknown>(
        `/api/v1/sensors/${enc(id)}/readings/aggregate` +
          qs({ interval, days, parameter, stats: "mean,min,max,count", tz: Intl.DateTimeFormat().resolvedOptions().timeZone }),
      );
      buckets = firstArray<Bucket>(body, ["buckets", "aggregates", "items"]);
    } catch (err) {
      if (id !== this.id) return;
      this.chart.clear();
      this.chartBox.hidden = true;
      note.textContent = missing(err)
        ? "History charts need the aggregate endpoint, which this gateway does not serve yet."
        : `History: ${(err as Error).message}`;
      this.chartBox.dataset.state = "unavailable";
      return;
    }
    if (id !== this.id) return;
    const unit = measurementsOf(this.latest?.measurements).find((m) => m.parameter === parameter)?.unit ?? "";
    this.chartBox.hidden = false;
    this.chartBox.dataset.state = "shown";
    this.chart.show(buckets, parameter, unit);
    const gaps = Number(this.chartBox.dataset.gaps);
    const flagged = Number(this.chartBox.dataset.flagged);
    note.textContent =
      `${buckets.length} buckets of ${interval} over ${this.opts.range}` +
      (gaps ? `; ${gaps} without readings, left as gaps` : "") +
      (flagged ? `; ${flagged} left out ${this.chartBox.dataset.excluded} suspect or failed values (marked)` : "") +
      ".";
  }

  /** downloadCSV fetches the chosen range as CSV with the key in the header and hands it
   * to the browser as a file. It asks the export endpoint first, then the readings page in
   * CSV, and builds the same columns from JSON pages when neither exists yet. */
  private async downloadCSV(status: HTMLElement): Promise<void> {
    const s = this.sensor;
    if (!s) return;
    const { days } = rangeQuery[this.opts.range];
    const until = new Date();
    const since = new Date(until.getTime() - days * 86400000);
    const span = { since: since.toISOString(), until: until.toISOString() };
    const name = `${s.external_id || s.id}-${this.opts.range}.csv`.replace(/[^A-Za-z0-9._-]/g, "_");
    status.textContent = "Preparing CSV…";
    let text = "";
    for (const url of [
      "/api/v1/readings/export" + qs({ sensor_ids: s.id, ...span, format: "csv" }),
      `/api/v1/sensors/${enc(s.id)}/readings` + qs({ ...span, format: "csv", limit: 500 }),
    ]) {
      try {
        const resp = await request(url, { headers: { accept: "text/csv" } });
        if ((resp.headers.get("content-type") ?? "").startsWith("text/csv")) {
          text = await resp.text();
          break;
        }
        await resp.body?.cancel();
      } catch (err) {
        if (!(err instanceof ApiError) || (err.status !== 404 && err.status !== 400)) {
          status.textContent = `CSV: ${(err as Error).message}`;
          return;
        }
      }
    }
    if (!text) {
      try {
        text = await this.csvFromPages(s, span);
      } catch (err) {
        status.textContent = `CSV: ${(err as Error).message}`;
        return;
      }
    }
    const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
    const a = el("a", { href: url, download: name, hidden: "" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    status.textContent = `Downloaded ${name}.`;
  }

  /** downloadExport fetches the chosen range from the export in a science format (parquet
   * or netcdf) with the key in the header and hands the file to the browser. */
  private async downloadExport(format: "parquet" | "netcdf", status: HTMLElement): Promise<void> {
    const s = this.sensor;
    if (!s) return;
    const { days } = rangeQuery[this.opts.range];
    const until = new Date();
    const since = new Date(until.getTime() - days * 86400000);
    const ext = format === "parquet" ? "parquet" : "nc";
    const name = `${s.external_id || s.id}-${this.opts.range}.${ext}`.replace(/[^A-Za-z0-9._-]/g, "_");
    status.textContent = `Preparing ${format === "parquet" ? "Parquet" : "NetCDF"}…`;
    let blob: Blob;
    try {
      const resp = await request(
        "/api/v1/readings/export" + qs({ sensor_ids: s.id, since: since.toISOString(), until: until.toISOString(), format }),
      );
      blob = await resp.blob();
    } catch (err) {
      status.textContent = `${format}: ${(err as Error).message}`;
      return;
    }
    const url = URL.createObjectURL(blob);
    const a = el("a", { href: url, download: name, hidden: "" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    status.textContent = `Downloaded ${name}.`;
  }

  private async csvFromPages(s: Sensor, span: { since: string; until: string }): Promise<string> {
    const rows = ["sensor_id,external_id,timestamp,parameter,value,unit,value_original,unit_original,qc_flag"];
    for (let page = 1; page <= 40; page++) {
      const body = await getJSON<{ readings?: Reading[]; pagination?: { total_pages?: number } }>(
        `/api/v1/sensors/${enc(s.id)}/readings` + qs({ ...span, limit: 500, page, sort: "asc" }),
      );
      for (const r of body.readings ?? []) {
        for (const m of measurementsOf(r.measurements)) {
          rows.push(
            [s.id, s.external_id ?? "", r.timestamp, m.parameter, m.value, m.unit ?? "", m.value_original ?? m.conversion?.source_value ?? "", m.unit_original ?? "", m.qc?.flag ?? 2]
              .map(csvField)
              .join(","),
          );
        }
      }
      if (!body.pagination || page >= (body.pagination.total_pages ?? 0)) break;
    }
    return rows.join("\r\n") + "\r\n";
  }
}

/** lineage is the hover text of a measurement: where its canonical value came from. */
function lineage(m: Measurement): string {
  const c = m.conversion;
  if (c && (c.source_value !== undefined || c.source_unit)) {
    const from = `${c.source_field ? c.source_field + " = " : ""}${c.source_value ?? ""} ${c.source_unit ?? ""}`.trim();
    return `original ${from}${c.rule ? `; ${c.rule}` : ""}${c.formula ? ` (${c.formula})` : ""}`;
  }
  if (m.value_original !== undefined || m.unit_original) {
    return `original ${m.value_original ?? ""} ${m.unit_original ?? ""}`.replace(/\s+/g, " ").trim();
  }
  return "";
}
