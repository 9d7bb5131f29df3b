// Browser test of the account dashboard (/account): Debian's chromium driven by
// playwright-core, with a virtual passkey authenticator from the DevTools protocol's
// WebAuthn domain, against two gateway replicas built from this checkout that share one
// catalog (SQLite file: sessions, keys, usage) and have KEY_CACHE_TTL=1s. The admin enrols
// from the link `gateway accounts create-admin` prints, signs out and in again with the
// passkey, creates a key, calls the API with it, sees the requests counted, rotates, revokes,
// and the revoked key is refused by the second replica within KEY_CACHE_TTL.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { freePort, waitFor } from "./stack.mjs";

const repo = fileURLToPath(new URL("../../..", import.meta.url));
const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const tmp = mkdtempSync(join(tmpdir(), "sensorgate-account-"));
const procs = [];
let browser;
let gw; // the gateway binary
let env; // the shared environment of both replicas and the CLI
let a = ""; // replica A, as the browser sees it (localhost: passkeys need a host name)
let b = ""; // replica B
let failed = false;


function start(name, extra) {
  const log = createWriteStream(join(tmp, name + ".log"));
  const p = spawn(gw, ["serve"], { env: { ...process.env, ...env, ...extra }, stdio: ["ignore", "pipe", "pipe"] });
  p.stdout.pipe(log);
  p.stderr.pipe(log);
  procs.push({ name, p });
}


const status = async (url, key) => (await fetch(url, { headers: { "x-api-key": key } })).status;

before(async () => {
  gw = join(tmp, "gateway");
  execFileSync("go", ["build", "-o", gw, "./gateway/cmd/gateway"], { cwd: repo, stdio: "inherit" });
  const [pa, pb] = await Promise.all([freePort(), freePort()]);
  a = `http://localhost:${pa}`;
  b = `http://127.0.0.1:${pb}`;
  env = {
    SQLITE_PATH: join(tmp, "gateway.db"), SENSORGATE_ENV: "development", SYNC_INTERVAL: "0",
    SERVICE_URLS: "ocean=http://127.0.0.1:1", KEY_CACHE_TTL: "1s", LOG_FORMAT: "json", ACCOUNT_ORIGIN: a,
  };
  start("gateway-a", { GATEWAY_ADDR: `127.0.0.1:${pa}` });
  await waitFor("replica a", async () => (await fetch(`http://127.0.0.1:${pa}/healthz`)).ok);
  start("gateway-b", { GATEWAY_ADDR: `127.0.0.1:${pb}` });
  await waitFor("replica b", async () => (await fetch(`${b}/healthz`)).ok);
  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-dev-shm-usage"],
  });
});

after(async () => {
  await browser?.close();
  for (const { p } of procs.reverse()) p.kill("SIGINT");
  await Promise.all(procs.map(({ p }) => new Promise((r) => (p.exitCode !== null ? r() : p.once("exit", r)))));
  if (failed) {
    for (const { name } of procs) console.log(`--- ${name} log (tail) ---\n` + readFileSync(join(tmp, name + ".log"), "utf8").slice(-2000));
  }
  if (!failed) rmSync(tmp, { recursive: true, force: true });
  else console.log("kept " + tmp);
});

test("enrol, sign in, create, count, rotate, revoke", async (t) => {
  failed = true; // until the last line
  const out = execFileSync(gw, ["accounts", "create-admin", "--name", "Ada", "--email", "ada@example.org"], {
    env: { ...process.env, ...env, GATEWAY_ADDR: "127.0.0.1:1" },
  }).toString();
  const link = out.split("\n")[0];
  assert.match(link, new RegExp(`^${a}/account#enrol=`));

  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // The page asks /account/api/me first; its 401 before sign-in is the browser's only
  // console error by design.
  page.on("console", (m) => m.type() === "error" && !/status of 401/.test(m.text()) && errors.push(m.text()));
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true,
      isUserVerified: true, automaticPresenceSimulation: true },
  });

  // Enrol from the admin's link.
  await page.goto(link);
  await page.click("#enrol-button");
  await page.waitForSelector("#dashboard:not([hidden])");
  assert.match(await page.textContent("#who"), /Ada \(admin\)/);
  assert.equal(new URL(page.url()).hash, "", "the enrolment token leaves the address bar");
  await page.waitForSelector("#audit td:text-is('passkey.add')");

  // Sign out, then in again with the discoverable passkey.
  await page.click("#signout");
  await page.waitForSelector("#signin:not([hidden])");
  await page.click("#passkey-signin");
  await page.waitForSelector("#dashboard:not([hidden])");
  const cookies = await context.cookies(a);
  const session = cookies.find((c) => c.name === "sg_session");
  assert.ok(session?.httpOnly && session.sameSite === "Lax", `session cookie ${JSON.stringify(session)}`);

  // Create a key: shown once, with a curl line.
  await page.fill("#key-name", "browser");
  await page.selectOption("#key-env", "development");
  await page.click("#create-key button[type=submit]");
  await page.waitForSelector("#new-key:not([hidden])");
  const key = (await page.textContent("#new-key-value")).trim();
  assert.match(key, /^sg_dev_[0-9a-f]{32}$/);
  assert.ok((await page.textContent("#curl-line")).includes(`x-api-key: ${key}`));

  // Call the API with it (on both replicas) and see the requests counted.
  for (let i = 0; i < 3; i++) assert.equal(await status(`${a}/api/v1/services`, key), 200);
  assert.equal(await status(`${b}/api/v1/services`, key), 200);
  const row = (p) => p.locator("#keys table[data-env=development] tr", { hasText: key.slice(0, 15) });
  await waitFor("requests counted on the page", async () => {
    await page.reload();
    await page.waitForSelector("#dashboard:not([hidden])");
    return (await row(page).locator(".this-hour").textContent()) === "4";
  }, 20000);
  await row(page).locator("button", { hasText: "Usage" }).click();
  await page.waitForSelector("#usage:not([hidden]) .uplot");
  assert.equal(await page.getAttribute("#usage-chart", "data-points"), "1");

  // Rotate with a day's grace: a new key; the old one still works.
  await row(page).locator("select").selectOption("P1D");
  await row(page).locator("button", { hasText: "Rotate" }).click();
  // (The page was reloaded since the first key was shown: the box is empty until the answer.)
  await waitFor("the rotated key", async () => /^sg_dev_/.test((await page.textContent("#new-key-value")).trim()));
  const next = (await page.textContent("#new-key-value")).trim();
  assert.equal(await status(`${b}/api/v1/services`, next), 200, `the new key ${next} on replica b`);
  assert.equal(await status(`${b}/api/v1/services`, key), 200, "within the grace the old key works");

  // Revoke the old key on replica A; replica B refuses it within KEY_CACHE_TTL (1 s).
  await row(page).locator("button", { hasText: "Revoke" }).click();
  await page.waitForSelector(`#keys tr.revoked:has-text("${key.slice(0, 15)}")`);
  const revoked = Date.now();
  await waitFor("replica b refuses the revoked key", async () => (await status(`${b}/api/v1/services`, key)) === 401, 3000);
  assert.ok(Date.now() - revoked < 2000, `replica b took ${Date.now() - revoked} ms`);
  assert.equal(await status(`${b}/api/v1/services`, next), 200, "the new key keeps working");

  // On a phone (390 px wide) nothing scrolls sideways, Sign out is on screen, keys are cards.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await page.waitForSelector("#dashboard:not([hidden])");
  const widths = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  assert.ok(widths[0] <= widths[1], `the page is ${widths[0]} px wide in a ${widths[1]} px viewport`);
  const so = await page.locator("#signout").boundingBox();
  assert.ok(so && so.x >= 0 && so.x + so.width <= 390, `Sign out at ${JSON.stringify(so)}`);
  assert.equal(await row(page).evaluate((tr) => getComputedStyle(tr).display), "block", "a key is a card below 600 px");
  assert.ok(await page.isVisible("#no-apps"), "no connected apps yet");
  assert.deepEqual(errors, []);
  await context.close();
  failed = false;
});
