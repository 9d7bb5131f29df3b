// Follows the live stream of new readings (Server-Sent Events) with Node's fetch, and
// resumes after a dropped connection where it left off: the id of the last event received
// goes back as Last-Event-ID, so no reading is lost or delivered twice.
//
//   node examples/js/follow-stream.mjs [--service weather] [--events 5] [--resumes 1]
//
// SENSORGATE_URL (default http://127.0.0.1:8080) and SENSORGATE_KEY (default the
// development key of `make run`) say where and who. Node 18 or newer; no packages.
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    service: { type: "string", default: "weather" },
    events: { type: "string", default: "5" }, // events per connection
    resumes: { type: "string", default: "1" }, // reconnections after the first
  },
});
const base = (process.env.SENSORGATE_URL ?? "http://127.0.0.1:8080").replace(/\/$/, "");
const key = process.env.SENSORGATE_KEY ?? "sg_dev_4f7b1d2c9a8e6b3f0d5c7a9e1b2d4f6a";
const url = `${base}/api/v1/readings/stream?service=${encodeURIComponent(opt.service)}`;

/** follow reads up to n events from one connection, resuming after lastId when given. */
async function follow(n, lastId) {
  const ctrl = new AbortController();
  const headers = { "x-api-key": key, accept: "text/event-stream" };
  if (lastId) headers["last-event-id"] = lastId;
  const res = await fetch(url, { headers, signal: ctrl.signal });
  if (!res.ok) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);

  const decoder = new TextDecoder();
  let buf = "";
  let seen = 0;
  let event = { id: "", data: [] };
  try {
    for await (const chunk of res.body) {
      buf += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (line === "") { // a blank line ends a frame
          if (event.data.length > 0) {
            const r = JSON.parse(event.data.join("\n"));
            if (event.id) lastId = event.id;
            const values = (r.measurements ?? []).slice(0, 3).map((m) => `${m.parameter}=${m.value}`).join(" ");
            console.log(`event ${event.id} ${r.external_id ?? r.sensor_id} ${r.timestamp} ${values}`);
            if (++seen >= n) return lastId;
          }
          event = { id: "", data: [] };
        } else if (line.startsWith("id:")) {
          event.id = line.slice(3).trim();
        } else if (line.startsWith("data:")) {
          event.data.push(line.slice(5).replace(/^ /, ""));
        } // "retry:" and ":" comments (heartbeats) need nothing here
      }
    }
    throw new Error("the stream ended"); // a gateway shutting down: resume elsewhere
  } finally {
    ctrl.abort(); // drop the connection, as a network failure would
  }
}

const n = Number(opt.events);
let last = await follow(n);
for (let i = 0; i < Number(opt.resumes); i++) {
  console.log(`resuming after ${last}`);
  last = await follow(n, last);
}
