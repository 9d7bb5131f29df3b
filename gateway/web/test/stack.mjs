// Helpers the browser tests share: a free local port, and polling until a condition holds.
import { createServer as netServer } from "node:net";

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
