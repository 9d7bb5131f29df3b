// Browser tests of the explorer (run by `make test` through `make test-web`): the real
// gateway and services, built from this checkout and run as processes, and Debian's
// chromium driven by playwright-core (no browser download). The ocean service runs in live
// mode against a local stand-in for NDBC that serves the recorded activestations.xml and a
// station file this test writes, so the test can publish a new reading and watch it reach
// the page; the air-quality service simulates its stations.
//
// The Wave 2 endpoints the page uses (area latest, aggregates, streams; docs/api-decisions.md)
// must be served: a router 404 from any of them fails the test. The page's degraded forms
// (points from the sensor list, charts hidden with a note, polling instead of a stream) are
// tested separately, with the browser answering those endpoints with a router 404.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Procs, freePort, launchChromium, waitFor } from "./stack.mjs";

const repo = fileURLToPath(new URL("../../..", import.meta.url));
const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const artifacts = process.env.ARTIFACTS_DIR || join(repo, "build", "artifacts", "explorer");
const key = "sg_dev_explorer_browser_test_0123456789";
const tmp = mkdtempSync(join(tmpdir(), "sensorgate-explorer-"));
const procs = new Procs(tmp);
let base = "";
let ndbc;
let browser;
const station = "41002";
let rows = []; // the stand-in's 41002.txt rows, newest first
let failed = false;

// --- The stack ---


function start(name, bin, env) {
  return procs.start(name, bin, name === "gateway" ? ["serve"] : [], env);
}


const api = (path, init = {}) => fetch(base + path, { ...init, headers: { "x-api-key": key, ...(init.headers ?? {}) } });
const apiJSON = async (path) => {
  const r = await api(path);
  assert.equal(r.status, 200, `GET ${path}: ${r.status}`);
  return r.json();
};

/** served tells whether the gateway has a route for path: not a router 404. */
async function served(path) {
  const ctrl = new AbortController();
  const r = await api(path, { signal: ctrl.signal });
  let code = "";
  if (r.status === 404) code = (await r.json().catch(() => ({}))).code ?? "";
  ctrl.abort();
  return !(r.status === 404 && code === "not_found");
}

const pad = (n, w = 2) => String(n).padStart(w, "0");
function ndbcRow(t, wspd, gap = false) {
  const d = new Date(t);
  return [
    d.getUTCFullYear(), pad(d.getUTCMonth() + 1), pad(d.getUTCDate()), pad(d.getUTCHours()), pad(d.getUTCMinutes()),
    " 160", wspd.toFixed(1).padStart(4), (wspd + 1).toFixed(1).padStart(4), "   1.2", "    6", "  4.5", "209",
    "1022.9", "  24.1", "  28.0", "   MM", "  MM", "  MM", "   MM",
  ].join(" ") + (gap ? "" : "");
}
function stationFile() {
  return (
    "#YY  MM DD hh mm WDIR WSPD GST  WVHT   DPD   APD MWD   PRES  ATMP  WTMP  DEWP  VIS PTDY  TIDE\n" +
    "#yr  mo dy hr mn degT m/s  m/s     m   sec   sec degT   hPa  degC  degC  degC  nmi  hPa    ft\n" +
    rows.join("\n") + "\n"
  );
}

before(async () => {
  if (!existsSync(chromiumPath)) {
    throw new Error(`chromium is missing at ${chromiumPath}: install it with \`apt-get install chromium\` (or set CHROMIUM_PATH)`);
  }
  mkdirSync(artifacts, { recursive: true });
  // Eight days of hourly rows for the station, with a 30-hour hole four days ago, so the
  // 7-day chart has buckets without readings.
  const hour = 3600000;
  const newest = Math.floor(Date.now() / hour) * hour - hour;
  for (let t = newest; t > newest - 8 * 24 * hour; t -= hour) {
    const ago = (newest - t) / hour;
    if (ago >= 90 && ago < 120) continue;
    // One 45 m/s wind speed two days ago: the QARTOD spike test fails it (docs/quality.md),
    // so the 7-day chart marks the bucket the aggregate left it out of.
    rows.push(ndbcRow(t, ago === 48 ? 45 : 5 + (ago % 7)));
  }
  const stations = readFileSync(join(repo, "testdata/providers/ndbc/activestations.xml"));
  ndbc = createServer((req, res) => {
    if (req.url === "/activestations.xml") {
      res.writeHead(200, { "content-type": "text/xml" }).end(stations);
    } else if (req.url === `/data/realtime2/${station}.txt`) {
      res.writeHead(200, { "content-type": "text/plain" }).end(stationFile());
    } else {
      res.writeHead(404).end("not here");
    }
  });
  await new Promise((r) => ndbc.listen(0, "127.0.0.1", r));
  const ndbcURL = `http://127.0.0.1:${ndbc.address().port}`;

  const bin = join(tmp, "bin");
  for (const [name, pkg] of [["gateway", "./gateway/cmd/gateway"], ["ocean", "./services/cmd/ocean"], ["airquality", "./services/cmd/airquality"]]) {
    execFileSync("go", ["build", "-o", join(bin, name), pkg], { cwd: repo, stdio: "inherit" });
  }
  const [gw, oc, aq] = await Promise.all([freePort(), freePort(), freePort()]);
  start("ocean", join(bin, "ocean"), {
    SERVICE_ADDR: `127.0.0.1:${oc}`, READINGS_SQLITE_PATH: join(tmp, "ocean.db"), SOURCE_MODE: "live",
    NOAA_NDBC_BASE_URL: ndbcURL, NOAA_NDBC_STATIONS: station, NOAA_NDBC_POLL_INTERVAL: "1s",
    NOAA_COOPS_BASE_URL: ndbcURL, NOAA_COOPS_STATIONS: "8723970", NOAA_COOPS_POLL_INTERVAL: "1h", LOG_FORMAT: "json",
  });
  start("airquality", join(bin, "airquality"), {
    SERVICE_ADDR: `127.0.0.1:${aq}`, READINGS_SQLITE_PATH: join(tmp, "aq.db"), SOURCE_MODE: "simulate",
    SIM_STATIONS: "12", SIM_DAYS: "2", SIM_SEED: "7", LOG_FORMAT: "json",
  });
  await waitFor("services", async () => (await fetch(`http://127.0.0.1:${oc}/readyz`)).ok && (await fetch(`http://127.0.0.1:${aq}/readyz`)).ok);
  start("gateway", join(bin, "gateway"), {
    GATEWAY_ADDR: `127.0.0.1:${gw}`, SQLITE_PATH: join(tmp, "gateway.db"), SENSORGATE_ENV: "development", DEV_API_KEY: key,
    SERVICE_URLS: `ocean=http://127.0.0.1:${oc},airquality=http://127.0.0.1:${aq}`, SYNC_INTERVAL: "1s", PROBE_INTERVAL: "1s",
    // A cached latest answer lives 1 s instead of 3 (docs/gateway.md), so a reading polled
    // without a stream endpoint reaches the page within 5 s: 1 s ingest poll, 1 s cache, 2 s page poll.
    READINGS_CACHE_TTL: "1s", LOG_FORMAT: "json",
  });
  base = `http://127.0.0.1:${gw}`;
  await waitFor("catalog with both services", async () => {
    const all = await listSensors();
    return all.some((s) => s.connected_service === "airquality") && all.some((s) => s.external_id === station);
  });
  await waitFor(`a reading of ${station}`, async () => (await api(`/api/v1/sensors/${station}/readings/latest`)).ok);
  browser = await launchChromium(["--disable-quic", "--disable-component-update", "--disable-sync"]);
});

after(async () => {
  await browser?.close();
  await procs.stopAll(failed, 1500);
  ndbc?.close();
  rmSync(tmp, { recursive: true, force: true });
});

async function listSensors() {
  const out = [];
  for (let page = 1; page < 50; page++) {
    const body = await apiJSON(`/api/v1/sensors?limit=1000&page=${page}`);
    out.push(...body.sensors);
    if (page >= body.pagination.total_pages) break;
  }
  return out;
}

function arrayOf(body, names) {
  if (Array.isArray(body)) return body;
  for (const n of names) if (Array.isArray(body?.[n])) return body[n];
  return [];
}

async function areaLatest(query) {
  const out = [];
  for (let page = 1; page < 50; page++) {
    const body = await apiJSON(`/api/v1/readings/latest?limit=1000&page=${page}${query}`);
    out.push(...arrayOf(body, ["readings", "items", "sensors", "latest"]));
    if (!body.pagination || page >= body.pagination.total_pages) break;
  }
  return out;
}

const located = (list) => list.filter((s) => typeof s.latitude === "number" && typeof s.longitude === "number");

/** parseCSV reads RFC 4180 text into rows of fields, failing on a malformed file. */
function parseCSV(text) {
  const out = [];
  let row = [], field = "", i = 0, quoted = false;
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i += 2; continue; }
      if (c === '"') { quoted = false; i++; continue; }
      field += c; i++; continue;
    }
    if (c === '"') {
      assert.equal(field, "", `CSV: quote inside an unquoted field at ${i}`);
      quoted = true; i++; continue;
    }
    if (c === ",") { row.push(field); field = ""; i++; continue; }
    if (c === "\r" || c === "\n") {
      row.push(field); out.push(row); row = []; field = "";
      i += c === "\r" && text[i + 1] === "\n" ? 2 : 1;
      continue;
    }
    field += c; i++;
  }
  assert.ok(!quoted, "CSV: unterminated quoted field");
  if (field !== "" || row.length) { row.push(field); out.push(row); }
  return out;
}

test("explorer in chromium", { timeout: 240000 }, async (t) => {
  // step runs one subtest and remembers a failure, so the processes' logs get printed.
  const step = (name, fn) =>
    t.test(name, async (st) => {
      try {
        await fn(st);
      } catch (err) {
        failed = true;
        throw err;
      }
    });
  const has = {
    areaLatest: await served("/api/v1/readings/latest?limit=1"),
    aggregate: await served(`/api/v1/sensors/${station}/readings/aggregate?interval=1h&days=1`),
    stream: await served("/api/v1/readings/stream"),
  };
  t.diagnostic(`Wave 2 endpoints served: ${JSON.stringify(has)}`);
  for (const [name, ok] of Object.entries(has)) assert.ok(ok, `the gateway does not serve ${name} (a router 404)`);
  const missingPaths = [
    "/api/v1/readings/export", // the CSV download tries it first and falls back
  ];
  const origin = new URL(base).origin;
  const errors = [];
  const foreign = [];
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: "UTC", acceptDownloads: true });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    const url = m.location()?.url ?? "";
    // The browser logs every 404 answer; those of endpoints this gateway lacks are expected.
    if (/status of 404/.test(m.text()) && missingPaths.some((p) => url.includes(p))) return;
    errors.push(`${m.text()} (${url})`);
  });
  page.on("pageerror", (e) => errors.push(`uncaught: ${e.message}`));
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.protocol !== "blob:" && u.protocol !== "data:" && u.origin !== origin) foreign.push(r.url());
  });

  const allSensors = await listSensors();
  const sensor = allSensors.find((s) => s.external_id === station);
  const expected = located(await areaLatest(""));

  await step("page loads: the world and one point per sensor of the API", async () => {
    const resp = await page.goto(`${base}/explorer#key=${key}`);
    assert.equal(resp.status(), 200);
    assert.match(resp.headers()["content-security-policy"], /script-src 'self';/);
    assert.equal(resp.headers()["x-content-type-options"], "nosniff");
    await page.waitForSelector("#count[data-total]");
    assert.equal(new URL(page.url()).hash, "", "the key stays in the address bar");
    assert.equal(await page.evaluate(() => localStorage.getItem("sensorgate.apiKey")), key);
    await page.waitForFunction(() => Number(document.getElementById("map").dataset.world) > 100);
    await page.waitForFunction((n) => document.getElementById("map").dataset.points === String(n), expected.length);
    assert.equal(await page.evaluate(() => document.body.dataset.source), "area-latest");
    t.diagnostic(`points: ${expected.length} (area latest)`);
  });

  await step("a filter changes the count to the API's", async () => {
    const want = located(await areaLatest("&service=airquality"));
    assert.ok(want.length > 0 && want.length < expected.length, `airquality has ${want.length} of ${expected.length}`);
    await page.selectOption("#f-service", "airquality");
    await page.waitForFunction((n) => document.getElementById("map").dataset.points === String(n), want.length);
    assert.match(page.url(), /service=airquality/, "the filter is in the URL");
    await page.selectOption("#f-service", "");
    await page.waitForFunction((n) => document.getElementById("map").dataset.points === String(n), expected.length);
  });

  await step("EPA AQI colors for air quality, kept in the URL", async () => {
    await page.check('input[name="color"][value="aqi"]');
    await page.waitForFunction(() => /EPA AQI/.test(document.getElementById("legend").textContent));
    assert.match(await page.textContent("#legend"), /0-50 good/);
    assert.match(page.url(), /color=aqi/);
    await page.check('input[name="color"][value="freshness"]');
    await page.waitForFunction(() => /Freshness/.test(document.getElementById("legend").textContent));
  });

  await step("clicking a sensor shows the API's latest value", async () => {
    // The view in the URL: zoomed in on the station, so its marker stands alone.
    await page.goto(`${base}/explorer?view=${sensor.longitude},${sensor.latitude},48`);
    await page.waitForFunction((n) => document.getElementById("map").dataset.points === String(n), expected.length);
    // The view is the bbox filter of the table: zoomed in, fewer sensors are in view.
    const visible = Number(await page.getAttribute("#count", "data-visible"));
    assert.ok(visible > 0 && visible < expected.length, `${visible} of ${expected.length} in view`);
    assert.ok(await page.locator(`#table button[data-id="${sensor.id}"]`).count() === 1, "the station is in the table");
    const xy = await page.evaluate((id) => window.sensorgateExplorer.screenOf(id), sensor.id);
    assert.ok(xy, "the station is drawn");
    const box = await page.locator("#map").boundingBox();
    await page.mouse.click(box.x + xy[0], box.y + xy[1]);
    await page.waitForSelector('td[data-parameter="wind_speed_ms"]');
    assert.equal((await page.textContent("#panel h2")).trim(), sensor.name);
    const latest = await apiJSON(`/api/v1/sensors/${sensor.id}/readings/latest`);
    const ms = Array.isArray(latest.reading.measurements)
      ? latest.reading.measurements
      : Object.entries(latest.reading.measurements).map(([parameter, value]) => ({ parameter, value }));
    for (const m of ms) {
      const shown = await page.getAttribute(`td[data-parameter="${m.parameter}"]`, "data-value");
      assert.equal(Number(shown), m.value, `${m.parameter} shown ${shown}, API ${m.value}`);
    }
    assert.equal(await page.getAttribute("#latest-time", "data-ts"), latest.reading.timestamp);
    assert.match(page.url(), new RegExp(`sensor=${sensor.id}`));
    // The stale flag is area latest's verdict (the one staleness rule), not the page's own.
    const [item] = await areaLatest(`&sensor_ids=${sensor.id}`);
    assert.equal((await page.textContent("#age .badge")).trim(), item.stale ? "stale" : "fresh");
  });

  await step("the 7-day chart: one point per aggregate bucket, gaps where empty", async () => {
    const answer = page.waitForResponse((r) => r.url().includes("/readings/aggregate") && r.url().includes("wind_speed_ms"));
    await page.selectOption("#chart-param", "wind_speed_ms");
    const body = await (await answer).json();
    const buckets = arrayOf(body, ["buckets", "aggregates", "items"]);
    const empty = buckets.filter((b) => !b.values?.wind_speed_ms || b.values.wind_speed_ms.count === 0 || b.values.wind_speed_ms.mean == null);
    assert.ok(empty.length > 0, "the station's 30-hour hole gives empty buckets");
    await page.waitForFunction(() => document.getElementById("chart").dataset.parameter === "wind_speed_ms");
    assert.equal(Number(await page.getAttribute("#chart", "data-points")), buckets.length);
    assert.equal(Number(await page.getAttribute("#chart", "data-nulls")), empty.length);
    // The spike was left out of its bucket (qc=good) and the chart marks that bucket.
    const left = buckets.filter((b) => (b.values?.wind_speed_ms?.excluded ?? 0) > 0);
    assert.equal(left.length, 1, "the 45 m/s spike is left out of one bucket");
    assert.equal(Number(await page.getAttribute("#chart", "data-flagged")), 1);
    assert.match(await page.textContent("#chart-note"), /1 left out 1 suspect or failed values/);
  });

  await step("Download CSV gives a parseable file", async () => {
    const download = page.waitForEvent("download");
    await page.click("#csv");
    const file = await (await download).path();
    const table = parseCSV(readFileSync(file, "utf8"));
    assert.deepEqual(table[0], ["sensor_id", "external_id", "timestamp", "parameter", "value", "unit", "value_original", "unit_original", "qc_flag"]);
    assert.ok(table.length > 10, `${table.length - 1} rows`);
    for (const r of table.slice(1)) {
      assert.equal(r.length, 9);
      assert.ok(!Number.isNaN(Number(r[4])) && r[4] !== "", `value ${r[4]}`);
      assert.ok(!Number.isNaN(Date.parse(r[2])), `timestamp ${r[2]}`);
    }
    writeFileSync(join(artifacts, "download.csv"), readFileSync(file));
  });

  await step("Parquet and NetCDF downloads are those files", async () => {
    for (const [id, magic, ext] of [["#download-parquet", "PAR1", ".parquet"], ["#download-netcdf", "CDF\x02", ".nc"]]) {
      const download = page.waitForEvent("download");
      await page.click(id);
      const d = await download;
      assert.ok(d.suggestedFilename().endsWith(ext), d.suggestedFilename());
      const bytes = readFileSync(await d.path());
      assert.equal(bytes.subarray(0, 4).toString("latin1"), magic, `${id} starts with ${magic}`);
      writeFileSync(join(artifacts, "download" + ext), bytes);
    }
  });

  await step("a new reading appears in the panel within 5 s", async () => {
    await page.waitForFunction(
      (want) => document.getElementById("live").dataset.state === want,
      "live",
    );
    // Any minute after the newest hourly row is new; two minutes ago leaves the next one
    // for the degraded test below.
    const now = Math.floor(Date.now() / 60000) * 60000 - 120000;
    rows.unshift(ndbcRow(now, 12.3));
    const t0 = Date.now();
    const ts = new Date(now).toISOString();
    await page.waitForFunction((want) => document.getElementById("latest-time")?.dataset.ts === want, ts, { timeout: 5000 });
    t.diagnostic(`new reading shown after ${Date.now() - t0} ms (stream)`);
    assert.equal(await page.getAttribute('td[data-parameter="wind_speed_ms"]', "data-value"), "12.3");
  });

  await step("keyboard: the table's sensors are buttons that open the panel", async () => {
    await page.goto(`${base}/explorer?service=airquality`);
    await page.waitForSelector("#table tbody button");
    await page.focus("#table tbody button");
    const name = (await page.textContent("#table tbody button")).trim();
    await page.keyboard.press("Enter");
    await page.waitForFunction((n) => document.activeElement?.id === "panel-title" && document.activeElement.textContent === n, name);
    // Arrow keys pan the focused map.
    const before = page.url();
    await page.focus("#map");
    await page.keyboard.press("ArrowRight");
    await page.waitForFunction((b) => location.href !== b, before);
  });

  await step("screenshots at desktop and phone width", async () => {
    await page.goto(`${base}/explorer?sensor=${sensor.id}`);
    await page.waitForSelector('td[data-parameter="wind_speed_ms"]');
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(artifacts, "explorer-desktop.png") });
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, timezoneId: "UTC" });
    const p2 = await phone.newPage();
    p2.on("pageerror", (e) => errors.push(`phone: ${e.message}`));
    await p2.goto(`${base}/explorer?sensor=${sensor.id}#key=${key}`);
    await p2.waitForSelector('td[data-parameter="wind_speed_ms"]');
    const width = await p2.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    assert.ok(width[0] <= 390 && width[1] === 390, `the page is ${width[0]} px wide in a ${width[1]} px layout, on a 390 px phone`);
    await p2.screenshot({ path: join(artifacts, "explorer-phone.png"), fullPage: true });
    await phone.close();
    const ms = await page.evaluate(() => window.sensorgateExplorer.drawTime(10000, 20));
    t.diagnostic(`10,000 points: ${ms.full.toFixed(1)} ms per full frame, ${ms.drag.toFixed(1)} ms per drag frame (measured, not asserted)`);
    t.diagnostic(`artifacts in ${artifacts}`);
  });

  await step("no console error, no request to another origin", () => {
    assert.deepEqual(errors, []);
    assert.deepEqual(foreign, []);
  });
  await context.close();

  await step("without the Wave 2 endpoints the page degrades instead of failing", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: "UTC" });
    const p = await ctx.newPage();
    const uncaught = [];
    p.on("pageerror", (e) => uncaught.push(e.message));
    // The browser answers area latest, aggregates and streams as a gateway without them would.
    const gone = /\/api\/v1\/(readings\/latest|readings\/stream|sensors\/[^/]+\/readings\/aggregate)(\?|$)/;
    await p.route((u) => gone.test(u.pathname + u.search) || gone.test(u.pathname), (r) =>
      r.fulfill({ status: 404, contentType: "application/json", body: JSON.stringify({ error: "no route", code: "not_found" }) }),
    );
    await p.goto(`${base}/explorer?sensor=${sensor.id}#key=${key}`);
    await p.waitForFunction((n) => document.getElementById("map").dataset.points === String(n), located(allSensors).length);
    assert.equal(await p.evaluate(() => document.body.dataset.source), "sensors");
    assert.match(await p.textContent("#source-note"), /area latest/);
    await p.waitForFunction(() => document.getElementById("chart")?.dataset.state === "unavailable");
    assert.match(await p.textContent("#chart-note"), /aggregate endpoint/);
    await p.waitForFunction(() => document.getElementById("live").dataset.state === "polling");
    const latest = await apiJSON(`/api/v1/sensors/${sensor.id}/readings/latest`);
    await p.waitForSelector('td[data-parameter="wind_speed_ms"]');
    assert.equal(await p.getAttribute("#latest-time", "data-ts"), latest.reading.timestamp);
    // A new reading still reaches the panel, by polling.
    const now = Math.floor(Date.now() / 60000) * 60000 - 60000;
    rows.unshift(ndbcRow(now, 7.7));
    await p.waitForFunction((want) => document.getElementById("latest-time")?.dataset.ts === want, new Date(now).toISOString(), { timeout: 10000 });
    assert.deepEqual(uncaught, []);
    await ctx.close();
  });
});
