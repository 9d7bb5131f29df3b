// The world map: country shapes from world-atlas (TopoJSON shipped with the page) drawn
// with d3-geo on one canvas, and every sensor as a canvas marker, so 10,000 points cost a
// few milliseconds per frame instead of 10,000 DOM nodes. Pan by dragging or the arrow
// keys, zoom with the wheel, a pinch, +/- or the buttons.
import { geoMercator, geoPath, type GeoProjection } from "d3-geo";
import { feature, mesh } from "topojson-client";
import type { Topology, GeometryCollection } from "topojson-specification";
import type { FeatureCollection, MultiLineString } from "geojson";
import { mapColors, paintMarkers, traceMarker, type Style } from "./colors";
import type { View } from "./state";

export interface MapPoint {
  id: string;
  name: string;
  lon: number;
  lat: number;
  style: Style;
}

export interface BBox {
  minLon: number;
  minLat: number;
  maxLon: number;
  maxLat: number;
}

const maxLat = 80;
const maxZoom = 512;

export class WorldMap {
  private ctx: CanvasRenderingContext2D;
  private proj: GeoProjection = geoMercator();
  private land: FeatureCollection | null = null;
  private borders: MultiLineString | null = null;
  private points: MapPoint[] = [];
  private xy = new Float32Array(0);
  private selected = "";
  private frame = 0;
  private width = 0;
  private height = 0;
  private dpr = 1;
  private pointers = new Map<number, { x: number; y: number }>();
  private moved = 0;
  /** drawn counts the markers of the last frame (read by the browser tests). */
  drawn = 0;

  constructor(
    private canvas: HTMLCanvasElement,
    public view: View,
    private onView: (v: View) => void,
    private onSelect: (id: string) => void,
  ) {
    this.ctx = canvas.getContext("2d")!;
    new ResizeObserver(() => this.resize()).observe(canvas);
    this.resize();
    this.listen();
  }

  async loadWorld(url: string): Promise<void> {
    const resp = await fetch(url);
    if (!resp.ok) throw new Error(`world map: ${resp.status}`);
    const topo = (await resp.json()) as Topology<{ countries: GeometryCollection; land: GeometryCollection }>;
    this.land = feature(topo, topo.objects.land) as unknown as FeatureCollection;
    this.borders = mesh(topo, topo.objects.countries, (a, b) => a !== b);
    this.canvas.dataset.world = String(topo.objects.countries.geometries.length);
    this.redraw();
  }

  setPoints(points: MapPoint[]): void {
    this.points = points;
    this.xy = new Float32Array(points.length * 2);
    this.redraw();
  }

  setSelected(id: string): void {
    this.selected = id;
    this.redraw();
  }

  setView(v: View, full = true): void {
    this.view = {
      lon: ((((v.lon + 180) % 360) + 360) % 360) - 180,
      lat: Math.max(-maxLat, Math.min(maxLat, v.lat)),
      zoom: Math.max(1, Math.min(maxZoom, v.zoom)),
    };
    if (full) this.redraw();
    this.onView(this.view);
  }

  /** bbox is the part of the world in view, or null when the whole width of the world is. */
  bbox(): BBox | null {
    this.configure();
    // Latitudes from the middle column (invert wraps longitudes into [-180, 180], so the
    // corners cannot give the longitude span); the span from the scale, which is linear in
    // longitude on a Mercator map.
    const top = this.proj.invert!([this.width / 2, 0]);
    const bottom = this.proj.invert!([this.width / 2, this.height]);
    if (!top || !bottom) return null;
    const north = Math.min(90, top[1]);
    const south = Math.max(-90, bottom[1]);
    const span = ((this.width / this.proj.scale()) * 180) / Math.PI;
    if (span >= 360) {
      return north >= 85 && south <= -85 ? null : { minLon: -180, maxLon: 180, minLat: south, maxLat: north };
    }
    const wrap = (x: number) => ((((x + 180) % 360) + 360) % 360) - 180;
    return { minLon: wrap(this.view.lon - span / 2), maxLon: wrap(this.view.lon + span / 2), minLat: south, maxLat: north };
  }

  /** pointAt returns the id of the marker nearest (x, y) within a touch-sized radius. */
  pointAt(x: number, y: number): string {
    let best = "";
    let bestD = 14 * 14;
    for (let i = 0; i < this.points.length; i++) {
      const dx = this.xy[2 * i] - x;
      const dy = this.xy[2 * i + 1] - y;
      const d = dx * dx + dy * dy;
      if (d < bestD) {
        bestD = d;
        best = this.points[i].id;
      }
    }
    return best;
  }

  /** screenOf returns where a point is drawn (for tests and focus), or null. */
  screenOf(id: string): [number, number] | null {
    const i = this.points.findIndex((p) => p.id === id);
    if (i < 0) return null;
    return [this.xy[2 * i], this.xy[2 * i + 1]];
  }

  /** benchmark draws n random points frames times and returns the mean milliseconds per
   * full frame and per drag frame, then restores the real points (measures the
   * 10,000-point claim; not a test). */
  benchmark(n: number, frames: number): { full: number; drag: number } {
    const saved = this.points;
    const style = saved[0]?.style ?? { color: "#56B4E9", shape: "circle" as const, label: "" };
    const fake: MapPoint[] = [];
    for (let i = 0; i < n; i++) fake.push({ id: "b" + i, name: "", lon: Math.random() * 360 - 180, lat: Math.random() * 140 - 70, style });
    this.points = fake;
    this.xy = new Float32Array(n * 2);
    const t0 = performance.now();
    for (let i = 0; i < frames; i++) this.draw();
    const full = (performance.now() - t0) / frames;
    // A drag frame: the last full frame (with the n points) moved by a few pixels.
    const t1 = performance.now();
    for (let i = 0; i < frames; i++) {
      this.shift = { x: i % 7, y: i % 5 };
      this.drawShifted();
    }
    const drag = (performance.now() - t1) / frames;
    this.setPoints(saved);
    return { full, drag };
  }

  zoomBy(f: number, x = this.width / 2, y = this.height / 2): void {
    this.configure();
    const before = this.proj.invert!([x, y]);
    const zoom = Math.max(1, Math.min(maxZoom, this.view.zoom * f));
    if (!before || zoom === this.view.zoom) return;
    this.view = { ...this.view, zoom };
    this.configure();
    const after = this.proj([before[0], before[1]]);
    if (after) this.panBy(after[0] - x, after[1] - y);
    else this.setView(this.view);
  }

  /** panBy moves the view so that the map moves by (-dx, -dy) pixels. */
  panBy(dx: number, dy: number, full = true): void {
    this.configure();
    const c = this.proj.invert!([this.width / 2 + dx, this.height / 2 + dy]);
    if (c) this.setView({ ...this.view, lon: c[0], lat: c[1] }, full);
  }

  private baseScale(): number {
    // Zoom 1 shows the world's width (or its height between the latitude limits).
    const mercH = 2 * Math.log(Math.tan(Math.PI / 4 + (maxLat * Math.PI) / 360));
    return Math.max(this.width / (2 * Math.PI), this.height / mercH);
  }

  private configure(): void {
    this.proj
      .rotate([-this.view.lon, 0])
      .center([0, this.view.lat])
      .scale(this.baseScale() * this.view.zoom)
      .translate([this.width / 2, this.height / 2])
      .precision(1);
  }

  private resize(): void {
    const r = this.canvas.getBoundingClientRect();
    this.dpr = window.devicePixelRatio || 1;
    this.width = Math.max(1, r.width);
    this.height = Math.max(1, r.height);
    this.canvas.width = Math.round(this.width * this.dpr);
    this.canvas.height = Math.round(this.height * this.dpr);
    this.redraw();
  }

  redraw(): void {
    this.fast = false;
    this.schedule();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      if (this.fast && this.cacheValid) this.drawShifted();
      else this.draw();
    });
  }

  // While a drag pans the map, each frame is the last full frame moved by the drag (a
  // Mercator pan is a pure translation), which costs one bitmap copy whatever the number
  // of points; the full frame is drawn again when the pointer rests for 120 ms or lifts.
  private cache = document.createElement("canvas");
  private cacheValid = false;
  private shift = { x: 0, y: 0 };
  private fast = false;
  private settle = 0;

  /** dragBy pans by a pointer drag of (dx, dy) pixels, drawing the cheap shifted frame. */
  private dragBy(dx: number, dy: number): void {
    this.configure();
    const anchor = this.proj.invert!([this.width / 2, this.height / 2]);
    this.panBy(dx, dy, false);
    this.configure();
    const moved = anchor && this.proj(anchor);
    if (moved) {
      this.shift.x += moved[0] - this.width / 2;
      this.shift.y += moved[1] - this.height / 2;
    }
    this.fast = true;
    this.schedule();
    clearTimeout(this.settle);
    this.settle = window.setTimeout(() => this.redraw(), 120);
  }

  private drawShifted(): void {
    const { ctx } = this;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = mapColors.ocean;
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.drawImage(this.cache, Math.round(this.shift.x * this.dpr), Math.round(this.shift.y * this.dpr));
  }

  private draw(): void {
    const { ctx } = this;
    this.configure();
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = mapColors.ocean;
    ctx.fillRect(0, 0, this.width, this.height);
    const path = geoPath(this.proj, ctx);
    if (this.land) {
      ctx.beginPath();
      path(this.land);
      ctx.fillStyle = mapColors.land;
      ctx.fill();
      ctx.lineWidth = 0.6;
      ctx.strokeStyle = mapColors.border;
      ctx.stroke();
    }
    if (this.borders) {
      ctx.beginPath();
      path(this.borders);
      ctx.lineWidth = 0.4;
      ctx.strokeStyle = mapColors.border;
      ctx.stroke();
    }
    const r = this.points.length > 2000 && this.view.zoom < 4 ? 2.5 : 4;
    let drawn = 0;
    let sel = -1;
    ctx.lineWidth = 1;
    // Project once, then trace every marker of one style into one path and paint it with
    // one fill and one stroke: per-point fills cost ten times more on a software canvas.
    const byStyle = new Map<Style, number[]>();
    for (let i = 0; i < this.points.length; i++) {
      const p = this.points[i];
      const xy = this.proj([p.lon, p.lat]);
      if (!xy || xy[0] < -10 || xy[1] < -10 || xy[0] > this.width + 10 || xy[1] > this.height + 10) {
        this.xy[2 * i] = this.xy[2 * i + 1] = -1e6;
        continue;
      }
      this.xy[2 * i] = xy[0];
      this.xy[2 * i + 1] = xy[1];
      let list = byStyle.get(p.style);
      if (!list) byStyle.set(p.style, (list = []));
      list.push(i);
      drawn++;
      if (p.id === this.selected) sel = i;
    }
    // Rings (never reported) first, so that a sensor with a reading is drawn on top.
    const groups = [...byStyle].sort((a, b) => Number(b[0].shape === "ring") - Number(a[0].shape === "ring"));
    for (const [style, list] of groups) {
      ctx.beginPath();
      for (const i of list) traceMarker(ctx, this.xy[2 * i], this.xy[2 * i + 1], r, style);
      // Dense views skip the dark outline, which doubles the raster work of 10,000 markers.
      paintMarkers(ctx, style, r > 3);
    }
    if (sel >= 0) {
      ctx.beginPath();
      ctx.arc(this.xy[2 * sel], this.xy[2 * sel + 1], r + 6, 0, Math.PI * 2);
      ctx.lineWidth = 3;
      ctx.strokeStyle = "#000";
      ctx.stroke();
      ctx.lineWidth = 1.5;
      ctx.strokeStyle = "#fff";
      ctx.stroke();
    }
    this.drawn = drawn;
    if (this.cache.width !== this.canvas.width || this.cache.height !== this.canvas.height) {
      this.cache.width = this.canvas.width;
      this.cache.height = this.canvas.height;
    }
    const cc = this.cache.getContext("2d")!;
    cc.clearRect(0, 0, this.cache.width, this.cache.height);
    cc.drawImage(this.canvas, 0, 0);
    this.cacheValid = true;
    this.shift = { x: 0, y: 0 };
    this.canvas.dataset.points = String(this.points.length);
    this.canvas.dataset.drawn = String(drawn);
  }

  private listen(): void {
    const c = this.canvas;
    const local = (e: { clientX: number; clientY: number }) => {
      const r = c.getBoundingClientRect();
      return { x: e.clientX - r.left, y: e.clientY - r.top };
    };
    c.addEventListener("pointerdown", (e) => {
      c.setPointerCapture(e.pointerId);
      this.pointers.set(e.pointerId, local(e));
      this.moved = 0;
    });
    c.addEventListener("pointermove", (e) => {
      const prev = this.pointers.get(e.pointerId);
      if (!prev) {
        const p = local(e);
        c.style.cursor = this.pointAt(p.x, p.y) ? "pointer" : "grab";
        return;
      }
      const p = local(e);
      if (this.pointers.size === 2) {
        const [a, b] = [...this.pointers.entries()];
        const other = a[0] === e.pointerId ? b[1] : a[1];
        const d0 = Math.hypot(prev.x - other.x, prev.y - other.y);
        const d1 = Math.hypot(p.x - other.x, p.y - other.y);
        if (d0 > 0) this.zoomBy(d1 / d0, (p.x + other.x) / 2, (p.y + other.y) / 2);
      } else {
        this.dragBy(prev.x - p.x, prev.y - p.y);
      }
      this.moved += Math.abs(prev.x - p.x) + Math.abs(prev.y - p.y);
      this.pointers.set(e.pointerId, p);
    });
    const up = (e: PointerEvent) => {
      if (!this.pointers.has(e.pointerId)) return;
      this.pointers.delete(e.pointerId);
      if (this.fast) this.redraw();
      if (this.moved < 5 && e.type === "pointerup") {
        const p = local(e);
        const id = this.pointAt(p.x, p.y);
        if (id) this.onSelect(id);
      }
    };
    c.addEventListener("pointerup", up);
    c.addEventListener("pointercancel", up);
    c.addEventListener(
      "wheel",
      (e) => {
        e.preventDefault();
        const p = local(e);
        this.zoomBy(Math.exp(-e.deltaY * (e.deltaMode ? 0.05 : 0.002)), p.x, p.y);
      },
      { passive: false },
    );
    c.addEventListener("dblclick", (e) => {
      const p = local(e);
      this.zoomBy(2, p.x, p.y);
    });
    c.addEventListener("keydown", (e) => {
      const step = Math.min(this.width, this.height) / 5;
      const keys: Record<string, () => void> = {
        ArrowLeft: () => this.panBy(-step, 0),
        ArrowRight: () => this.panBy(step, 0),
        ArrowUp: () => this.panBy(0, -step),
        ArrowDown: () => this.panBy(0, step),
        "+": () => this.zoomBy(2),
        "=": () => this.zoomBy(2),
        "-": () => this.zoomBy(0.5),
        "0": () => this.setView({ lon: 0, lat: 20, zoom: 1 }),
      };
      const f = keys[e.key];
      if (f) {
        e.preventDefault();
        f();
      }
    });
  }
}
