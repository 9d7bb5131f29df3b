// Unit tests of the explorer's rules that need no browser: the sources are bundled with
// esbuild into a temporary module and imported.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "explorer-units-"));
await build({
  stdin: {
    contents: `export * from "./src/buckets"; export * from "./src/colors"; export * from "./src/format"; export { readState } from "./src/state";`,
    resolveDir: root,
    loader: "ts",
  },
  bundle: true,
  format: "esm",
  platform: "node",
  outfile: join(dir, "units.mjs"),
  logLevel: "warning",
});
const m = await import(pathToFileURL(join(dir, "units.mjs")));
rmSync(dir, { recursive: true, force: true });

test("empty buckets become gaps, not zeros", () => {
  const b = (start, stats) => ({ start, values: { wind_speed_ms: stats } });
  const { data, gaps } = m.series(
    [
      b("2026-11-20T00:00:00.000Z", { mean: 5, min: 4, max: 7, count: 3, coverage: 1 }),
      b("2026-11-20T03:00:00.000Z", { mean: null, min: null, max: null, count: 0, coverage: 0 }),
      { start: "2026-11-20T06:00:00.000Z", values: {} },
      b("2026-11-20T09:00:00.000Z", { mean: 0, min: 0, max: 0, count: 1, coverage: 0.5 }),
    ],
    "wind_speed_ms",
  );
  const t0 = Date.parse("2026-11-20T00:00:00.000Z") / 1000;
  assert.deepEqual(data[0], [t0, t0 + 10800, t0 + 21600, t0 + 32400]);
  assert.deepEqual(data[1], [5, null, null, 0], "a real 0 stays a value");
  assert.deepEqual(data[2], [4, null, null, 0]);
  assert.deepEqual(data[3], [7, null, null, 0]);
  assert.equal(gaps, 2);
});

test("each chart range stays under the 1000-bucket limit", () => {
  const hours = { "1h": 1, "3h": 3, "6h": 6, "1d": 24 };
  for (const [range, q] of Object.entries(m.rangeQuery)) {
    const n = (q.days * 24) / hours[q.interval];
    assert.ok(n >= 24 && n <= 1000, `${range}: ${n} buckets`);
  }
});

test("EPA AQI from PM2.5 (2024 breakpoints) and its categories", () => {
  for (const [pm, aqi] of [[0, 0], [9.0, 50], [9.1, 51], [35.4, 100], [35.5, 101], [55.4, 150], [125.5, 201], [225.4, 300], [500, 500]]) {
    assert.equal(m.aqiFromPM25(pm), aqi, `PM2.5 ${pm}`);
  }
  assert.equal(m.aqiStyle(42).label, "0-50 good");
  assert.equal(m.aqiStyle(151).label, "151-200 unhealthy");
  assert.equal(m.aqiStyle(420).label, "301+ hazardous");
  assert.equal(m.aqiStyle(undefined), m.noAqi);
});

test("freshness classes differ in shape as well as color", () => {
  const shapes = new Set(["fresh", "stale", "never", "unavailable"].map((k) => m.freshnessStyles[k].shape));
  assert.equal(shapes.size, 4);
});

test("the palette survives color-vision deficiencies", () => {
  const out = execFileSync("node", [join(root, "tools/palette-check.mjs")], { encoding: "utf8" });
  assert.match(out, /deuteranopia .* ok/);
});

test("CSV fields are quoted as RFC 4180 asks", () => {
  assert.equal(m.csvField("plain"), "plain");
  assert.equal(m.csvField('say "hi", then\nleave'), '"say ""hi"", then\nleave"');
  assert.equal(m.csvField(null), "");
  assert.equal(m.csvField(1.5), "1.5");
});

test("the URL state is read with defaults and clamps", () => {
  const s = m.readState("?service=ocean&view=500,-95,0.1&range=1y&color=aqi&sensor=41002");
  assert.equal(s.service, "ocean");
  assert.deepEqual(s.view, { lon: 180, lat: -80, zoom: 1 });
  assert.equal(s.range, "1y");
  assert.equal(s.color, "aqi");
  assert.equal(s.sensor, "41002");
  const d = m.readState("?range=5y&view=x");
  assert.equal(d.range, "7d");
  assert.equal(d.color, "freshness");
  assert.deepEqual(d.view, { lon: 0, lat: 20, zoom: 1 });
});

test("ages read as a person would say them", () => {
  assert.equal(m.age(null), "never");
  assert.equal(m.age(42), "42 s");
  assert.equal(m.age(600), "10 min");
  assert.equal(m.age(3 * 3600), "3 h");
  assert.equal(m.age(5 * 86400), "5 d");
});

test("buckets that left out suspect or failed values are marked", () => {
  const b = (start, stats) => ({ start, values: { water_temperature_c: stats } });
  const { data, flagged, excluded } = m.series(
    [
      b("2026-11-20T00:00:00.000Z", { mean: 20, min: 19, max: 21, count: 5, coverage: 1, excluded: 1 }),
      b("2026-11-20T01:00:00.000Z", { mean: 21, min: 20, max: 22, count: 6, coverage: 1, excluded: 0 }),
      b("2026-11-20T02:00:00.000Z", { mean: null, min: null, max: null, count: 0, coverage: 0, excluded: 6 }),
    ],
    "water_temperature_c",
  );
  assert.deepEqual(data[4], [20, null, 21], "at the mean, or the last mean when all were left out");
  assert.equal(flagged, 2);
  assert.equal(excluded, 7);
});
