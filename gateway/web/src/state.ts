// The page's state lives in the query string (shareable links); the key never does.

export type Range = "24h" | "7d" | "30d" | "1y";
export const ranges: Range[] = ["24h", "7d", "30d", "1y"];

export interface View {
  lon: number;
  lat: number;
  zoom: number;
}

export interface State {
  q: string;
  service: string;
  type: string;
  provider: string;
  parameter: string;
  color: "freshness" | "aqi";
  view: View;
  sensor: string;
  range: Range;
  chartParam: string;
}

export const worldView: View = { lon: 0, lat: 20, zoom: 1 };

export function readState(search = location.search): State {
  const p = new URLSearchParams(search);
  const num = (s: string | undefined, def: number, lo: number, hi: number) => {
    const n = Number(s);
    return s !== undefined && s !== "" && Number.isFinite(n) ? Math.min(hi, Math.max(lo, n)) : def;
  };
  const [lon, lat, zoom] = (p.get("view") ?? "").split(",");
  const range = p.get("range") as Range;
  return {
    q: p.get("q") ?? "",
    service: p.get("service") ?? "",
    type: p.get("type") ?? "",
    provider: p.get("provider") ?? "",
    parameter: p.get("parameter") ?? "",
    color: p.get("color") === "aqi" ? "aqi" : "freshness",
    view: {
      lon: num(lon, worldView.lon, -180, 180),
      lat: num(lat, worldView.lat, -80, 80),
      zoom: num(zoom, worldView.zoom, 1, 512),
    },
    sensor: p.get("sensor") ?? "",
    range: ranges.includes(range) ? range : "7d",
    chartParam: p.get("chart") ?? "",
  };
}

export function writeState(s: State): void {
  const p = new URLSearchParams();
  if (s.q) p.set("q", s.q);
  if (s.service) p.set("service", s.service);
  if (s.type) p.set("type", s.type);
  if (s.provider) p.set("provider", s.provider);
  if (s.parameter) p.set("parameter", s.parameter);
  if (s.color !== "freshness") p.set("color", s.color);
  const v = s.view;
  if (v.lon !== worldView.lon || v.lat !== worldView.lat || v.zoom !== worldView.zoom) {
    p.set("view", [v.lon.toFixed(3), v.lat.toFixed(3), v.zoom.toFixed(2)].join(","));
  }
  if (s.sensor) p.set("sensor", s.sensor);
  if (s.range !== "7d") p.set("range", s.range);
  if (s.chartParam) p.set("chart", s.chartParam);
  const q = p.toString();
  const url = location.pathname + (q ? "?" + q : "") + location.hash;
  if (url !== location.pathname + location.search + location.hash) history.replaceState(null, "", url);
}
