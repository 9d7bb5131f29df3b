// Server-Sent Events over fetch (docs/api-decisions.md, "Streams"): EventSource cannot send
// the x-api-key header, so the page reads the stream itself, and on a drop reconnects after
// the server's retry: delay with Last-Event-ID, which resumes without gap or duplicate.
import { key } from "./api";

export type LiveState = "connecting" | "live" | "reconnecting" | "unavailable" | "off";

export interface LiveEvent {
  id: string;
  event: string;
  data: string;
}

export class Stream {
  private ctrl: AbortController | null = null;
  private lastId = "";
  private retry = 3000;
  private stopped = false;
  private timer = 0;

  constructor(
    private url: string,
    private onEvent: (e: LiveEvent) => void,
    private onState: (s: LiveState, detail?: string) => void,
  ) {}

  start(): void {
    this.stopped = false;
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.ctrl?.abort();
    this.onState("off");
  }

  private async connect(): Promise<void> {
    this.ctrl = new AbortController();
    const ctrl = this.ctrl;
    const headers: Record<string, string> = { "x-api-key": key(), accept: "text/event-stream" };
    if (this.lastId) headers["last-event-id"] = this.lastId;
    this.onState(this.lastId ? "reconnecting" : "connecting");
    let watchdog = 0;
    const arm = () => {
      clearTimeout(watchdog);
      // The server sends at least a comment every 15 s; silence for 45 s is a dead link.
      watchdog = window.setTimeout(() => ctrl.abort(), 45000);
    };
    try {
      const resp = await fetch(this.url, { headers, signal: ctrl.signal, cache: "no-store", credentials: "omit" });
      if (resp.status === 404 || resp.status === 405 || resp.status === 501) {
        this.onState("unavailable", "no stream endpoint");
        return; // not retried: the endpoint does not exist on this gateway
      }
      if (resp.status === 401) {
        this.onState("unavailable", "key refused");
        return;
      }
      if (!resp.ok || !resp.body) throw new Error(`stream: ${resp.status}`);
      this.onState("live");
      arm();
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      let ev: LiveEvent = { id: "", event: "message", data: "" };
      let dataLines: string[] = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        arm();
        buf += value;
        let nl: number;
        while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
          if (line === "") {
            if (dataLines.length) {
              ev.data = dataLines.join("\n");
              if (ev.id) this.lastId = ev.id;
              this.onEvent(ev);
            }
            ev = { id: "", event: "message", data: "" };
            dataLines = [];
            continue;
          }
          if (line.startsWith(":")) continue; // comment (keep-alive)
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "data") dataLines.push(val);
          else if (field === "event") ev.event = val;
          else if (field === "id") ev.id = val;
          else if (field === "retry" && /^\d+$/.test(val)) this.retry = Number(val);
        }
      }
    } catch (err) {
      if (this.stopped) return;
    } finally {
      clearTimeout(watchdog);
    }
    if (this.stopped) return;
    this.onState("reconnecting");
    this.timer = window.setTimeout(() => void this.connect(), this.retry);
  }
}
