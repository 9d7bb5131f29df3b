// The explorer page: filters and URL state, the map and the table of the sensors in view,
// the sensor panel and the live stream. Endpoints that this gateway does not serve yet
// (a 404 from the router) make the page degrade, never break: points come from the sensor
// list when area latest is missing, charts hide when aggregates are missing, and the panel
// polls when streams are missing.
import "./style.css";
import {
  ApiError,
  firstArray,
  getJSON,
  key,
  measurementsOf,
  missing,
  qs,
  setKey,
  takeKeyFromFragment,
  type AreaItem,
  type Reading,
  type Sensor,
} from "./api";
import { aqiBands, aqiFromPM25, aqiStyle, freshnessStyles, noAqi, drawMarker, type Freshness, type Style } from "./colors";
import { age, el, lonlat } from "./format";
import { Stream, type LiveState } from "./live";
import { WorldMap, type BBox, type MapPoint } from "./map";
import { Panel } from "./panel";
import { readState, writeState, type State } from "./state";

const canonicalParameters = [
  "air_temperature_c",
  "water_temperature_c",
  "pm2_5_ug_per_m3",
  "pm10_ug_per_m3",
  "ozone_ppb",
  "aqi",
  "wind_speed_ms",
  "wind_direction_deg",
  "air_pressure_hpa",
  "relative_humidity_percent",
  "wave_height_m",
];

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

type Source = "area-latest" | "sensors";

interface Item extends AreaItem {
  id: string;
  freshness: Freshness;
}

const state: State = readState();
let items: Item[] = [];
let byId = new Map<string, Item>();
let source: Source = "area-latest";
let loadSeq = 0;
let stream: Stream | null = null;
let pollTimer = 0;

takeKeyFromFragment();
const map = new WorldMap($<HTMLCanvasElement>("map"), state.view, onView, (id) => select(id, true));
const panel = new Panel($("panel"), {
  range: state.range,
  chartParam: state.chartParam,
  onRange: (r, p) => {
    state.range = r;
    state.chartParam = p;
    writeState(state);
  },
});

// For the browser tests and the README's measurement: where a sensor is drawn, and how long
// the map takes to draw n points.
(window as unknown as Record<string, unknown>).sensorgateExplorer = {
  screenOf: (id: string) => map.screenOf(id),
  drawTime: (n: number, frames: number) => map.benchmark(n, frames),
};

void main();

async function main(): Promise<void> {
  wireKeyForm();
  wireFilters();
  renderLegend();
  map.loadWorld("/explorer/assets/countries-110m.json").catch((err) => status(`World map: ${err.message}`));
  if (!key()) {
    showKeyForm("Enter an API key to see the sensors.");
    return;
  }
  await start();
}

async function start(): Promise<void> {
  await loadOptions();
  await loadPoints();
  if (state.sensor) await select(state.sensor, false);
}

// --- The key ---

function wireKeyForm(): void {
  const form = $<HTMLFormElement>("key-form");
  $("key-button").addEventListener("click", () => showKeyForm(""));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const v = $<HTMLInputElement>("key-input").value.trim();
    if (!v) return;
    setKey(v);
    form.hidden = true;
    void start();
  });
  $("key-forget").addEventListener("click", () => {
    setKey("");
    showKeyForm("Key forgotten.");
  });
}

function showKeyForm(msg: string): void {
  const form = $<HTMLFormElement>("key-form");
  form.hidden = false;
  $("key-error").textContent = msg;
  $<HTMLInputElement>("key-input").focus();
}

/** failed reports an error; a refused key opens the key form. */
function failed(what: string, err: unknown): void {
  if (err instanceof ApiError && err.status === 401) {
    showKeyForm(`The key was refused (${err.message}).`);
    return;
  }
  status(`${what}: ${(err as Error).message}`);
}

function status(msg: string): void {
  $("map-status").textContent = msg;
}

// --- Filters ---

function wireFilters(): void {
  const search = $<HTMLInputElement>("f-search");
  search.value = state.q;
  let t = 0;
  search.addEventListener("input", () => {
    clearTimeout(t);
    t = window.setTimeout(() => {
      state.q = search.value.trim();
      changed();
    }, 300);
  });
  const selects: [string, keyof State][] = [
    ["f-service", "service"],
    ["f-type", "type"],
    ["f-provider", "provider"],
    ["f-parameter", "parameter"],
  ];
  for (const [id, field] of selects) {
    $<HTMLSelectElement>(id).addEventListener("change", (e) => {
      (state as unknown as Record<string, string>)[field] = (e.target as HTMLSelectElement).value;
      changed();
    });
  }
  for (const r of document.querySelectorAll<HTMLInputElement>("input[name=color]")) {
    r.checked = r.value === state.color;
    r.addEventListener("change", () => {
      if (!r.checked) return;
      state.color = r.value === "aqi" ? "aqi" : "freshness";
      writeState(state);
      renderLegend();
      restyle();
    });
  }
  $("zoom-in").addEventListener("click", () => map.zoomBy(2));
  $("zoom-out").addEventListener("click", () => map.zoomBy(0.5));
  $("zoom-reset").addEventListener("click", () => map.setView({ lon: 0, lat: 20, zoom: 1 }));
  document.querySelector("#filters")!.addEventListener("submit", (e) => e.preventDefault());
}

function changed(): void {
  writeState(state);
  void loadPoints();
}

function fill(id: string, values: { value: string; label: string }[], current: string): void {
  const s = $<HTMLSelectElement>(id);
  const first = s.options[0];
  s.replaceChildren(first, ...values.map((v) => el("option", { value: v.value }, v.label)));
  if (current && !values.some((v) => v.value === current)) s.append(el("option", { value: current }, current));
  s.value = current;
}

async function loadOptions(): Promise<void> {
  const [services, types, projects] = await Promise.allSettled([
    getJSON<unknown>("/api/v1/services"),
    getJSON<unknown>("/api/v1/sensors/types"),
    getJSON<unknown>("/api/v1/projects?limit=1000"),
  ]);
  if (services.status === "fulfilled") {
    const list = firstArray<{ id: string; name?: string }>(services.value, ["services", "items"]);
    fill("f-service", list.map((s) => ({ value: s.id, label: s.name ? `${s.name} (${s.id})` : s.id })), state.service);
  }
  if (types.status === "fulfilled") {
    const list = firstArray<string>(types.value, ["types", "items"]);
    fill("f-type", list.map((t) => ({ value: t, label: t })), state.type);
  }
  if (projects.status === "fulfilled") {
    const seen = new Map<string, string>();
    for (const p of firstArray<Record<string, unknown>>(projects.value, ["projects", "items"])) {
      const prov = p.provider as { slug?: string; name?: string } | string | undefined;
      const slug = typeof prov === "string" ? prov : (prov?.slug ?? (p.provider_slug as string | undefined));
      const name = typeof prov === "string" ? prov : (prov?.name ?? (p.provider_name as string | undefined));
      if (slug) seen.set(slug, name || slug);
    }
    fill("f-provider", [...seen].sort().map(([value, label]) => ({ value, label })), state.provider);
  }
  fill("f-parameter", canonicalParameters.map((p) => ({ value: p, label: p })), state.parameter);
  $<HTMLInputElement>("f-search").value = state.q;
  const failure = [services, types, projects].find((r) => r.status === "rejected") as PromiseRejectedResult | undefined;
  if (failure) failed("Filter options", failure.reason);
}

// --- Points ---

function filterQuery(): Record<string, string> {
  return {
    search: state.q,
    sensor_type: state.type,
    provider: state.provider,
    data_types: state.parameter,
  };
}

async function loadPoints(): Promise<void> {
  const seq = ++loadSeq;
  status("Loading sensors…");
  let list: Item[];
  try {
    list = await fetchAreaLatest();
    source = "area-latest";
  } catch (err) {
    if (!missing(err)) {
      if (seq === loadSeq) failed("Sensors", err);
      return;
    }
    try {
      list = await fetchSensorList();
      source = "sensors";
    } catch (err2) {
      if (seq === loadSeq) failed("Sensors", err2);
      return;
    }
  }
  if (seq !== loadSeq) return;
  items = list;
  byId = new Map(list.map((i) => [i.id, i]));
  document.body.dataset.source = source;
  $("source-note").textContent =
    source === "sensors" ? "Freshness is unknown: this gateway does not serve area latest yet, so points come from the sensor list." : "";
  status("");
  restyle();
  startLive();
}

async function pages<T>(path: string, params: Record<string, string>, names: string[]): Promise<T[]> {
  const out: T[] = [];
  for (let page = 1; page <= 50; page++) {
    const body = await getJSON<{ pagination?: { total_pages?: number } }>(path + qs({ ...params, limit: 1000, page }));
    out.push(...firstArray<T>(body, names));
    const total = body?.pagination?.total_pages;
    if (!total || page >= total) break;
  }
  return out;
}

async function fetchAreaLatest(): Promise<Item[]> {
  const raw = await pages<AreaItem>("/api/v1/readings/latest", { ...filterQuery(), service: state.service }, [
    "readings",
    "items",
    "sensors",
    "latest",
  ]);
  return raw.map((a) => {
    const id = a.sensor_id ?? a.id ?? "";
    const freshness: Freshness = a.unavailable ? "unavailable" : !a.timestamp ? "never" : a.stale ? "stale" : "fresh";
    return { ...a, id, freshness };
  });
}

async function fetchSensorList(): Promise<Item[]> {
  const raw = await pages<Sensor>(
    "/api/v1/sensors",
    { ...filterQuery(), fields: "id,external_id,name,latitude,longitude,connected_service,sensor_type" },
    ["sensors"],
  );
  return raw
    .filter((s) => !state.service || s.connected_service === state.service)
    .map((s) => ({
      id: s.id,
      external_id: s.external_id,
      name: s.name,
      latitude: s.latitude,
      longitude: s.longitude,
      service_id: s.connected_service,
      freshness: "unknown" as Freshness,
    }));
}

function styleOf(i: Item): Style {
  if (state.color === "aqi") {
    const ms = measurementsOf(i.measurements);
    const aqi = ms.find((m) => m.parameter === "aqi")?.value;
    const pm = ms.find((m) => m.parameter === "pm2_5_ug_per_m3")?.value;
    return aqiStyle(aqi ?? (pm !== undefined ? aqiFromPM25(pm) : undefined));
  }
  return freshnessStyles[i.freshness];
}

function restyle(): void {
  const pts: MapPoint[] = [];
  for (const i of items) {
    if (typeof i.latitude !== "number" || typeof i.longitude !== "number") continue;
    pts.push({ id: i.id, name: i.name ?? i.id, lon: i.longitude, lat: i.latitude, style: styleOf(i) });
  }
  map.setPoints(pts);
  map.setSelected(state.sensor);
  renderTable();
}

// --- View, table, legend ---

function onView(): void {
  state.view = map.view;
  writeState(state);
  renderTableSoon();
}

let tableTimer = 0;
function renderTableSoon(): void {
  clearTimeout(tableTimer);
  tableTimer = window.setTimeout(renderTable, 150);
}

function inBox(i: Item, b: BBox | null): boolean {
  if (typeof i.latitude !== "number" || typeof i.longitude !== "number") return b === null;
  if (!b) return true;
  if (i.latitude < b.minLat || i.latitude > b.maxLat) return false;
  return b.minLon <= b.maxLon ? i.longitude >= b.minLon && i.longitude <= b.maxLon : i.longitude >= b.minLon || i.longitude <= b.maxLon;
}

const tableLimit = 200;

function renderTable(): void {
  const b = map.bbox();
  const visible = items.filter((i) => inBox(i, b));
  const located = items.filter((i) => typeof i.latitude === "number" && typeof i.longitude === "number").length;
  const count = $("count");
  count.textContent = `${items.length} sensors, ${located} on the map, ${visible.length} in view`;
  count.dataset.total = String(items.length);
  count.dataset.visible = String(visible.length);
  const tbody = $<HTMLTableElement>("table").tBodies[0];
  const rows = visible.slice(0, tableLimit).map((i) => {
    const btn = el("button", { type: "button", class: "linkish", "data-id": i.id }, i.name || i.id);
    btn.addEventListener("click", () => void select(i.id, true));
    const st = state.color === "aqi" ? styleOf(i) : freshnessStyles[i.freshness];
    const tr = el(
      "tr",
      { "aria-selected": String(i.id === state.sensor) },
      el("td", {}, btn),
      el("td", {}, i.service_id ?? ""),
      el("td", {}, swatch(st), " ", st.label),
      el("td", {}, i.freshness === "unknown" ? "" : age(i.age_seconds ?? null)),
      el("td", {}, lonlat(i.latitude, i.longitude)),
    );
    return tr;
  });
  tbody.replaceChildren(...rows);
  $("table-more").textContent = visible.length > tableLimit ? `Showing the first ${tableLimit} of ${visible.length}; zoom in or filter to see the rest.` : "";
}

function swatch(s: Style): HTMLCanvasElement {
  const c = el("canvas", { width: "28", height: "28", class: "swatch", "aria-hidden": "true" });
  const ctx = c.getContext("2d");
  if (ctx) {
    ctx.scale(2, 2);
    drawMarker(ctx, 7, 7.5, 4.5, s);
  }
  return c;
}

function renderLegend(): void {
  const styles: Style[] =
    state.color === "aqi"
      ? [...aqiBands.map((b) => aqiStyle(b.max)), noAqi]
      : (["fresh", "stale", "never", "unavailable", "unknown"] as Freshness[]).map((f) => freshnessStyles[f]);
  const title = state.color === "aqi" ? "EPA AQI (from aqi, or from PM2.5)" : "Freshness of the latest reading";
  $("legend").replaceChildren(
    el("p", { class: "legend-title" }, title),
    el("ul", {}, ...styles.map((s) => el("li", {}, swatch(s), " ", s.label))),
  );
}

// --- Selection and live updates ---

async function select(id: string, focus: boolean): Promise<void> {
  state.sensor = id;
  writeState(state);
  // A shared link may name the sensor by its external id; the map knows the UUID.
  const item = byId.get(id) ?? items.find((i) => i.external_id === id) ?? null;
  map.setSelected(item?.id ?? id);
  selectedAt = Date.now();
  renderTableSoon();
  await panel.show(id, item, focus);
}

function setLive(s: LiveState, detail = ""): void {
  const live = $("live");
  live.dataset.state = s;
  live.textContent = `live: ${s}${detail ? ` (${detail})` : ""}`;
  if (s === "unavailable") startPolling();
  else stopPolling();
}

function startLive(): void {
  stream?.stop();
  const url = "/api/v1/readings/stream" + qs({ ...filterQuery(), service: state.service });
  stream = new Stream(url, (e) => onLiveEvent(e.event, e.data), setLive);
  stream.start();
}

let refreshIds = new Set<string>();
let refreshTimer = 0;

function onLiveEvent(event: string, data: string): void {
  if (event !== "reading" && event !== "message") return;
  let r: Reading & { sensor_id?: string; reading?: Reading };
  try {
    r = JSON.parse(data);
  } catch {
    return;
  }
  const reading = r.reading ?? r;
  const sid = r.sensor_id ?? reading.sensor_id ?? "";
  if (sid && sid === panel.current) panel.takeReading(reading);
  if (sid && byId.has(sid)) {
    // The freshness verdict comes from the server's one staleness rule: ask area latest
    // again for the sensors that reported, at most once a second.
    refreshIds.add(sid);
    clearTimeout(refreshTimer);
    refreshTimer = window.setTimeout(refreshSome, 1000);
  }
}

async function refreshSome(): Promise<void> {
  if (source !== "area-latest" || refreshIds.size === 0) return;
  const ids = [...refreshIds].slice(0, 200);
  refreshIds = new Set();
  try {
    const body = await getJSON<unknown>("/api/v1/readings/latest" + qs({ sensor_ids: ids.join(",") }));
    for (const a of firstArray<AreaItem>(body, ["readings", "items", "sensors", "latest"])) {
      const id = a.sensor_id ?? a.id ?? "";
      const it = byId.get(id);
      if (!it) continue;
      Object.assign(it, a, { freshness: a.unavailable ? "unavailable" : !a.timestamp ? "never" : a.stale ? "stale" : "fresh" });
      if (id === panel.current) panel.updateArea(it);
    }
    restyle();
  } catch {
    /* the next reading tries again */
  }
}

/** Without a stream endpoint, the shown sensor's latest reading is polled instead, while
 * the page is visible: every 2 s for the first 10 minutes after a sensor is chosen, then
 * every 30 s, so an open page stays within a development key's 1000 requests an hour
 * (300 + 100). */
let selectedAt = 0;
let lastPoll = 0;

function startPolling(): void {
  if (pollTimer) return;
  const tick = async () => {
    const every = Date.now() - selectedAt < 600000 ? 2000 : 30000;
    if (panel.current && document.visibilityState === "visible" && Date.now() - lastPoll >= every - 100) {
      lastPoll = Date.now();
      try {
        const ans = await getJSON<{ reading: Reading }>(`/api/v1/sensors/${encodeURIComponent(panel.current)}/readings/latest`);
        panel.takeReading(ans.reading);
      } catch {
        /* shown by the next successful poll or the panel */
      }
    }
  };
  pollTimer = window.setInterval(tick, 1000);
  $("live").textContent = "live: polling (no stream endpoint)";
  $("live").dataset.state = "polling";
}

function stopPolling(): void {
  clearInterval(pollTimer);
  pollTimer = 0;
}
