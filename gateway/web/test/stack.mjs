// Helpers the browser tests share: a free local port, polling until a condition holds, the
// processes a test starts, Debian's chromium, and an admin with a passkey.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { createWriteStream, readFileSync } from "node:fs";
import { createServer as netServer } from "node:net";
import { join } from "node:path";
import { chromium } from "playwright-core";

/** freePort returns a TCP port free on 127.0.0.1 right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = netServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

/** waitFor polls fn every 200 ms until it returns a truthy value (returned) or ms pass. */
export async function waitFor(what, fn, ms = 90000) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch {
      /* not yet */
    }
    if (Date.now() > end) throw new Error(`${what}: not ready after ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Procs are the processes a test starts, each logging to <dir>/<name>.log: stopAll
 * interrupts them (newest first), waits for them, and on failure prints each log's tail.
 */
export class Procs {
  constructor(dir) {
    this.dir = dir;
    this.list = [];
  }

  /** start runs bin with args and env added to the test's environment. */
  start(name, bin, args, env) {
    const log = createWriteStream(join(this.dir, name + ".log"));
    const p = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    p.stdout.pipe(log);
    p.stderr.pipe(log);
    this.list.push({ name, p });
    return p;
  }

  async stopAll(failed, tail = 2000) {
    for (const { p } of [...this.list].reverse()) p.kill("SIGINT");
    await Promise.all(this.list.map(({ p }) => new Promise((r) => (p.exitCode !== null ? r() : p.once("exit", r)))));
    if (failed) {
      for (const { name } of this.list) console.log(`--- ${name} log (tail) ---\n` + readFileSync(join(this.dir, name + ".log"), "utf8").slice(-tail));
    }
  }
}

/** launchChromium starts Debian's chromium (CHROMIUM_PATH overrides) headless for playwright. */
export function launchChromium(extraArgs = []) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-dev-shm-usage", ...extraArgs],
  });
}

/**
 * enrolAdmin creates an admin with `gateway accounts create-admin` (gw, env) and enrols a
 * passkey from the link it prints, in a new browser context with the DevTools protocol's
 * WebAuthn virtual authenticator: it returns the context, its page (on the dashboard,
 * signed in) and the page's errors so far and to come. The dashboard asks /account/api/me
 * first; its 401 before sign-in is the browser's only console error by design.
 */
export async function enrolAdmin(browser, gw, env, origin) {
  const out = execFileSync(gw, ["accounts", "create-admin", "--name", "Ada", "--email", "ada@example.org"], {
    env: { ...process.env, ...env, GATEWAY_ADDR: "127.0.0.1:1" },
  }).toString();
  const link = out.split("\n")[0];
  assert.match(link, new RegExp(`^${origin}/account#enrol=`));
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && !/status of 401/.test(m.text()) && errors.push(m.text()));
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true,
      isUserVerified: true, automaticPresenceSimulation: true },
  });
  await page.goto(link);
  await page.click("#enrol-button");
  await page.waitForSelector("#dashboard:not([hidden])");
  return { context, page, errors };
}
