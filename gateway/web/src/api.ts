// The API client of the explorer: every request goes to the page's own origin with the key
// in the x-api-key header (docs/spec.md 5), never in a query string.

const KEY_STORAGE = "sensorgate.apiKey";

/** ApiError is a non-2xx answer, with the {"error","code"} envelope when there was one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** takeKeyFromFragment stores a key given as #key=... (printed by `make run`) and removes it
 * from the address bar, so it is neither bookmarked nor shared. */
export function takeKeyFromFragment(): void {
  const hash = new URLSearchParams(location.hash.slice(1));
  const k = hash.get("key");
  if (!k) return;
  setKey(k);
  hash.delete("key");
  const rest = hash.toString();
  history.replaceState(null, "", location.pathname + location.search + (rest ? "#" + rest : ""));
}

export function getKey(): string {
  try {
    return localStorage.getItem(KEY_STORAGE) ?? "";
  } catch {
    return "";
  }
}

export function setKey(k: string): void {
  try {
    if (k) localStorage.setItem(KEY_STORAGE, k);
    else localStorage.removeItem(KEY_STORAGE);
  } catch {
    /* storage disabled: the key lasts for this page only */
  }
  memoryKey = k;
}

let memoryKey = "";

export function key(): string {
  return getKey() || memoryKey;
}

/** request sends a GET with the key and returns the response, throwing ApiError on a
 * non-2xx answer. */
export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("x-api-key", key());
  const resp = await fetch(path, { ...init, headers, credentials: "omit", cache: "no-cache" });
  if (!resp.ok) {
    let code = "http_" + resp.status;
    let msg = `${resp.status} ${resp.statusText}`;
    try {
      const body = await resp.json();
      if (body && typeof body.code === "string") code = body.code;
      if (body && typeof body.error === "string") msg = body.error;
    } catch {
      /* not the JSON envelope */
    }
    throw new ApiError(resp.status, code, msg);
  }
  return resp;
}

export async function getJSON<T>(path: string, init?: RequestInit): Promise<T> {
  const resp = await request(path, init);
  return (await resp.json()) as T;
}

/** missing tells whether an error means the endpoint is not there (yet): a 404 from the
 * router, or a 405/501. Such endpoints make the page degrade instead of failing. */
export function missing(err: unknown): boolean {
  return err instanceof ApiError && (err.code === "not_found" || err.status === 405 || err.status === 501);
}

export function qs(params: Record<string, string | number | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") u.set(k, String(v));
  }
  const s = u.toString();
  return s ? "?" + s : "";
}

// --- Shapes of the answers the page reads (docs/spec.md 2, docs/api-decisions.md Wave 2). ---

export interface Conversion {
  rule?: string;
  formula?: string;
  source_field?: string;
  source_value?: number | string;
  source_unit?: string;
}

export interface Measurement {
  parameter: string;
  value: number;
  unit?: string;
  unit_original?: string;
  value_original?: number;
  conversion?: Conversion;
  /** QARTOD quality (docs/quality.md): 1 pass, 2 not evaluated, 3 suspect, 4 fail, 9 missing. */
  qc?: { flag: number; failed: string[] };
}

export interface Reading {
  id?: string;
  sensor_id?: string;
  timestamp: string;
  measurements?: Measurement[] | Record<string, number>;
  raw?: unknown;
  source_format?: string;
}

export interface Sensor {
  id: string;
  external_id?: string;
  name: string;
  description?: string;
  sensor_type?: string;
  status?: string;
  data_types?: string[];
  latitude?: number | null;
  longitude?: number | null;
  provider_name?: string;
  provider_slug?: string;
  feed_name?: string;
  connected_service?: string;
}

export interface AreaItem {
  sensor_id?: string;
  id?: string;
  external_id?: string;
  name?: string;
  latitude?: number | null;
  longitude?: number | null;
  service_id?: string;
  timestamp?: string | null;
  age_seconds?: number | null;
  expected_interval_seconds?: number | null;
  stale?: boolean;
  unavailable?: boolean;
  measurements?: Measurement[] | Record<string, number>;
}

export interface Pagination {
  page: number;
  limit: number;
  total: number;
  total_pages: number;
}

/** measurementsOf turns either measurement form (canonical array or legacy flat object)
 * into the array form. */
export function measurementsOf(m: Measurement[] | Record<string, number> | undefined | null): Measurement[] {
  if (!m) return [];
  if (Array.isArray(m)) return m;
  return Object.entries(m).map(([parameter, value]) => ({ parameter, value }));
}

/** firstArray finds the list in an answer whose envelope name is not fixed by the contract
 * (items, readings, sensors, buckets...). */
export function firstArray<T>(body: unknown, names: string[]): T[] {
  if (Array.isArray(body)) return body as T[];
  if (body && typeof body === "object") {
    const o = body as Record<string, unknown>;
    for (const n of names) if (Array.isArray(o[n])) return o[n] as T[];
  }
  return [];
}
