// Point styles: freshness uses the Okabe-Ito colors, which stay apart under protan, deutan
// and tritan vision (tools/palette-check.mjs measures it), and a shape per class, so color
// is never the only cue. The AQI option uses the EPA's official category colors, with the
// category named in the legend and the panel.
import palette from "./palette.json";

export type Freshness = "fresh" | "stale" | "never" | "unavailable" | "unknown";
export type Shape = "circle" | "triangle" | "ring" | "square";

export interface Style {
  color: string;
  shape: Shape;
  label: string;
}

export const freshnessStyles = palette.freshness as Record<Freshness, Style>;
export const mapColors = palette.map;
export const aqiBands = palette.aqi;
export const noAqi: Style = { color: "#555555", shape: "ring", label: "no AQI value" };

/** aqiStyle colors an AQI value by the EPA's categories. */
export function aqiStyle(aqi: number | undefined): Style {
  if (aqi === undefined || !Number.isFinite(aqi)) return noAqi;
  const band = aqiBands.find((b) => aqi <= b.max) ?? aqiBands[aqiBands.length - 1];
  return { color: band.color, shape: "circle", label: band.label };
}

// EPA PM2.5 breakpoints (24-hour, 2024 revision): [conc low, conc high, AQI low, AQI high].
const pm25Breakpoints: [number, number, number, number][] = [
  [0, 9.0, 0, 50],
  [9.1, 35.4, 51, 100],
  [35.5, 55.4, 101, 150],
  [55.5, 125.4, 151, 200],
  [125.5, 225.4, 201, 300],
  [225.5, 325.4, 301, 500],
];

/** aqiFromPM25 is the EPA AQI of a PM2.5 concentration in µg/m³, for sensors that report
 * PM2.5 but no AQI. */
export function aqiFromPM25(c: number): number {
  const t = Math.floor(c * 10) / 10;
  for (const [cl, ch, il, ih] of pm25Breakpoints) {
    if (t <= ch) return Math.round(((ih - il) / (ch - cl)) * (Math.max(t, cl) - cl) + il);
  }
  return 500;
}

/** drawMarker draws one point of the given style at (x, y). */
export function drawMarker(ctx: CanvasRenderingContext2D, x: number, y: number, r: number, s: Style): void {
  ctx.beginPath();
  traceMarker(ctx, x, y, r, s);
  paintMarkers(ctx, s);
}

/** paintMarkers fills and outlines the markers traced into the current path: one fill and
 * one stroke for all markers of a style, which is what keeps 10,000 points fast. */
export function paintMarkers(ctx: CanvasRenderingContext2D, s: Style, outline = true): void {
  if (s.shape === "ring") {
    ctx.lineWidth = 2;
    ctx.strokeStyle = s.color;
    ctx.stroke();
    ctx.lineWidth = 1;
    return;
  }
  ctx.fillStyle = s.color;
  ctx.fill();
  if (!outline) return;
  ctx.strokeStyle = mapColors.outline;
  ctx.stroke();
}

/** traceMarker adds the outline of one marker to the current path. */
export function traceMarker(ctx: CanvasRenderingContext2D, x: number, y: number, r: number, s: Style): void {
  switch (s.shape) {
    case "triangle":
      ctx.moveTo(x, y - r * 1.25);
      ctx.lineTo(x + r * 1.1, y + r * 0.75);
      ctx.lineTo(x - r * 1.1, y + r * 0.75);
      ctx.closePath();
      break;
    case "square":
      ctx.rect(x - r * 0.9, y - r * 0.9, r * 1.8, r * 1.8);
      break;
    default:
      ctx.moveTo(x + r, y);
      ctx.arc(x, y, r, 0, Math.PI * 2);
  }
}
