// Browser test of the account dashboard (/account): Debian's chromium driven by
// playwright-core, with a virtual passkey authenticator from the DevTools protocol's
// WebAuthn domain, against two gateway replicas built from this checkout that share one
// catalog (SQLite file: sessions, keys, usage) and have KEY_CACHE_TTL=1s. The admin enrols
// from the link `gateway accounts create-admin` prints, signs out and in again with the
// passkey, creates a key, calls the API with it, sees the requests counted, rotates, revokes,
// and the revoked key is refused by the second replica within KEY_CACHE_TTL.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Procs, enrolAdmin, freePort, launchChromium, waitFor } from "./stack.mjs";

const repo = fileURLToPath(new URL("../../..", import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), "sensorgate-account-"));
let procs;
let browser;
let gw; // the gateway binary
let env; // the shared environment of both replicas and the CLI
let a = ""; // replica A, as the browser sees it (localhost: passkeys need a host name)
let b = ""; // replica B
let failed = false;

function start(name, extra) {
  procs.start(name, gw, ["serve"], { ...env, ...extra });
}

const status = async (url, key) => (await fetch(url, { headers: { "x-api-key": key } })).status;

before(async () => {
  procs = new Procs(tmp);
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
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await procs?.stopAll(failed);
  if (!failed) rmSync(tmp, { recursive: true, force: true });
  else console.log("kept " + tmp);
});

test("enrol, sign in, create, count, rotate, revoke", async (t) => {
  failed = true; // until the last line
  // Enrol from the admin's link.
  const { context, page, errors } = await enrolAdmin(browser, gw, env, a);
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
