// The account dashboard (/account): sign in with a passkey (or create one from an enrolment
// link), then manage API keys per environment, see their usage and projects; admins see
// accounts, plans and the audit log. Every call goes to /account/api/ with the session
// cookie (same origin); the server refuses state changes from other origins.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import "./account.css";

type Account = { id: string; name: string; email: string; role: "user" | "admin"; created_at: string };
type Key = {
  id: string; name: string; prefix: string; environment: string; plan: string; limit_per_hour: number;
  created_at: string; last_used_at: string | null; requests_this_hour: number; expires_at: string | null;
  revoked_at: string | null; scopes: string[]; key?: string;
};
type App = { client_id: string; client_name: string; scopes: string[]; created_at: string; last_used_at: string | null };
const allScopes = ["sensors:read", "readings:read", "alerts:write"];

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

class APIError extends Error {
  constructor(public status: number, public code: string, message: string) {
    super(message);
  }
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const r = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (r.status === 204) return undefined as T;
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new APIError(r.status, j.code ?? "", j.error ?? `HTTP ${r.status}`);
  return j as T;
}

function say(msg: string) {
  $("status").textContent = msg;
}

// --- Passkeys (the browser's WebAuthn JSON forms) ---

async function enrol(token: string | undefined, name?: string) {
  const opts = await call<{ publicKey: PublicKeyCredentialCreationOptionsJSON }>("POST", "/account/auth/passkey/register/begin",
    token ? { token } : { name });
  const cred = (await navigator.credentials.create({
    publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(opts.publicKey),
  })) as PublicKeyCredential | null;
  if (!cred) throw new Error("no passkey was created");
  await call("POST", "/account/auth/passkey/register/finish", cred.toJSON());
}

async function signIn() {
  const opts = await call<{ publicKey: PublicKeyCredentialRequestOptionsJSON }>("POST", "/account/auth/passkey/login/begin");
  const cred = (await navigator.credentials.get({
    publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(opts.publicKey),
  })) as PublicKeyCredential | null;
  if (!cred) throw new Error("no passkey was chosen");
  await call("POST", "/account/auth/passkey/login/finish", cred.toJSON());
}

// --- Rendering ---

// cell adds a cell; label names its column, shown beside the value when rows become cards
// on a narrow screen (account.css).
function cell(tr: HTMLTableRowElement, text: string, tag: "td" | "th" = "td", label = "") {
  const c = document.createElement(tag);
  c.textContent = text;
  if (label) c.dataset.label = label;
  tr.append(c);
  return c;
}

function when(t: string | null): string {
  return t ? t.replace("T", " ").replace(/\.\d+Z$/, " UTC") : "never";
}

function button(label: string, onClick: () => void): HTMLButtonElement {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.addEventListener("click", onClick);
  return b;
}

async function renderKeys() {
  const { keys } = await call<{ keys: Key[] }>("GET", "/account/api/keys");
  const box = $("keys");
  box.replaceChildren();
  for (const env of ["development", "production"]) {
    const h = document.createElement("h3");
    h.textContent = env;
    const t = document.createElement("table");
    t.dataset.env = env;
    t.className = "cards";
    const cols = ["Name", "Prefix", "Scopes", "Plan", "Limit / hour", "Created", "Last used", "This hour", "Expires"];
    const head = t.insertRow();
    for (const c of [...cols, ""]) cell(head, c, "th");
    for (const k of keys.filter((k) => k.environment === env)) {
      const tr = t.insertRow();
      tr.dataset.key = k.id;
      if (k.revoked_at) tr.className = "revoked";
      const values = [k.name || "-", k.prefix, (k.scopes ?? allScopes).join(" "), k.plan || "default", String(k.limit_per_hour),
        when(k.created_at), when(k.last_used_at), String(k.requests_this_hour),
        k.revoked_at ? "revoked " + when(k.revoked_at) : k.expires_at ? when(k.expires_at) : "-"];
      values.forEach((v, i) => {
        const c = cell(tr, v, "td", cols[i]);
        if (cols[i] === "This hour") c.className = "this-hour";
      });
      const actions = cell(tr, "");
      actions.append(button("Usage", () => void showUsage(k)));
      if (!k.revoked_at) {
        const grace = document.createElement("select");
        grace.setAttribute("aria-label", "grace period of the old key");
        for (const [v, l] of [["PT0S", "no grace"], ["PT1H", "1 hour"], ["P1D", "1 day"], ["P7D", "7 days"]]) {
          grace.add(new Option(l, v));
        }
        actions.append(grace, button("Rotate", () => void rotate(k, grace.value)), button("Revoke", () => void revoke(k)));
      }
    }
    box.append(h, t);
  }
}

function showNewKey(k: Key) {
  $("new-key").hidden = false;
  $("new-key-value").textContent = k.key ?? "";
  $("curl-line").textContent = `curl -H 'x-api-key: ${k.key}' '${location.origin}/api/v1/sensors?limit=5'`;
}

async function rotate(k: Key, grace: string) {
  try {
    showNewKey(await call<Key>("POST", `/account/api/keys/${k.id}/rotate`, { grace }));
    say(`Rotated ${k.prefix}: the old key works until the grace ends.`);
    await renderKeys();
  } catch (e) {
    say(String((e as Error).message));
  }
}

async function revoke(k: Key) {
  try {
    await call("DELETE", `/account/api/keys/${k.id}`);
    say(`Revoked ${k.prefix}.`);
    await renderKeys();
  } catch (e) {
    say(String((e as Error).message));
  }
}

let chart: uPlot | undefined;

async function showUsage(k: Key) {
  const { hours } = await call<{ hours: { hour: string; requests: number }[] }>("GET", `/account/api/keys/${k.id}/usage?days=30`);
  $("usage").hidden = false;
  $("usage-h").textContent = `Usage of ${k.prefix}, last 30 days (requests per hour)`;
  const xs = hours.map((h) => Date.parse(h.hour) / 1000);
  const ys = hours.map((h) => h.requests);
  chart?.destroy();
  const el = $("usage-chart");
  el.dataset.points = String(hours.length);
  chart = new uPlot({
    width: Math.min(900, el.clientWidth || 900), height: 220,
    series: [{}, { label: "requests", stroke: "#2b6cb0", fill: "rgba(43,108,176,.15)", points: { show: true } }],
    scales: { x: { time: true } },
  }, [xs, ys], el);
}

async function renderApps() {
  const { apps } = await call<{ apps: App[] }>("GET", "/account/api/apps");
  const t = $<HTMLTableElement>("apps");
  t.replaceChildren();
  $("no-apps").hidden = apps.length > 0;
  t.hidden = apps.length === 0;
  const cols = ["App", "Scopes", "Connected", "Last used"];
  const head = t.insertRow();
  for (const c of [...cols, ""]) cell(head, c, "th");
  for (const a of apps) {
    const tr = t.insertRow();
    tr.dataset.app = a.client_id;
    [a.client_name, a.scopes.join(" "), when(a.created_at), when(a.last_used_at)].forEach((v, i) => cell(tr, v, "td", cols[i]));
    cell(tr, "").append(button("Disconnect", () => void disconnect(a)));
  }
}

async function disconnect(a: App) {
  try {
    await call("DELETE", `/account/api/apps/${encodeURIComponent(a.client_id)}`);
    say(`Disconnected ${a.client_name}: its tokens stop working.`);
    await renderApps();
  } catch (e) {
    say(String((e as Error).message));
  }
}

async function renderProjects() {
  const body = await call<{ projects: { name: string; slug: string; visibility: string }[] }>("GET", "/account/api/projects");
  const ul = $("projects");
  ul.replaceChildren(...body.projects.map((p) => {
    const li = document.createElement("li");
    li.textContent = `${p.name} (${p.slug}, ${p.visibility})`;
    return li;
  }));
  if (body.projects.length === 0) ul.textContent = "No projects yet.";
}

async function renderAdmin() {
  $("admin").hidden = false;
  const { accounts } = await call<{ accounts: (Account & { disabled_at: string | null })[] }>("GET", "/account/api/admin/accounts");
  const t = $<HTMLTableElement>("accounts");
  t.replaceChildren();
  const head = t.insertRow();
  for (const c of ["Name", "Email", "Role", "Created", "Disabled"]) cell(head, c, "th");
  for (const a of accounts) {
    const tr = t.insertRow();
    for (const v of [a.name, a.email || "-", a.role, when(a.created_at), a.disabled_at ? when(a.disabled_at) : "-"]) cell(tr, v);
  }
  const { plans, development } = await call<{ plans: { name: string; limit_per_hour: number }[]; development: { limit_per_hour: number } }>(
    "GET", "/account/api/admin/plans");
  $("plans").replaceChildren(...[...plans, { name: "development keys", limit_per_hour: development.limit_per_hour }].map((p) => {
    const li = document.createElement("li");
    li.textContent = `${p.name}: ${p.limit_per_hour} requests per hour`;
    return li;
  }));
  const { events } = await call<{ events: { at: string; actor: string; action: string; target: string; address: string }[] }>(
    "GET", "/account/api/admin/audit");
  const at = $<HTMLTableElement>("audit");
  at.replaceChildren();
  const ah = at.insertRow();
  for (const c of ["At", "Actor", "Action", "Target", "Address"]) cell(ah, c, "th");
  for (const e of events) {
    const tr = at.insertRow();
    for (const v of [when(e.at), e.actor, e.action, e.target, e.address]) cell(tr, v);
  }
}

async function showDashboard(me: Account) {
  $("signin").hidden = true;
  $("dashboard").hidden = false;
  $("signout").hidden = false;
  $("who").textContent = `${me.name} (${me.role})`;
  await Promise.all([renderKeys(), renderApps(), renderProjects(), me.role === "admin" ? renderAdmin() : Promise.resolve()]);
}

async function start() {
  const token = new URLSearchParams(location.hash.slice(1)).get("enrol") ?? undefined;
  let me: Account | undefined;
  try {
    me = await call<Account>("GET", "/account/api/me");
  } catch (e) {
    if (!(e instanceof APIError && e.status === 401)) throw e;
  }
  if (me && !token) return showDashboard(me);
  const ways = await call<{ oidc: boolean; open_signup: boolean }>("GET", "/account/auth/methods");
  $("signin").hidden = false;
  $("enrol").hidden = !token;
  $("signup").hidden = !!token || !ways.open_signup;
  $("oidc-signin").hidden = !ways.oidc;
}

async function afterSignIn() {
  // A sign-in on the way to connecting an app (OAuth) goes back to the app's request.
  const { next } = await call<{ next: string | null }>("GET", "/account/auth/next");
  if (next) {
    location.assign(next);
    return;
  }
  history.replaceState(null, "", "/account"); // the used enrolment token leaves the address bar
  await showDashboard(await call<Account>("GET", "/account/api/me"));
  say("");
}

function guard(fn: () => Promise<void>) {
  return () => {
    fn().catch((e: Error) => say(e instanceof APIError ? e.message : `${e.name}: ${e.message}`));
  };
}

$("passkey-signin").addEventListener("click", guard(async () => {
  await signIn();
  await afterSignIn();
}));
$("enrol-button").addEventListener("click", guard(async () => {
  await enrol(new URLSearchParams(location.hash.slice(1)).get("enrol") ?? undefined);
  await afterSignIn();
}));
$("signup").addEventListener("submit", (ev) => {
  ev.preventDefault();
  guard(async () => {
    await enrol(undefined, $<HTMLInputElement>("signup-name").value);
    await afterSignIn();
  })();
});
$("signout").addEventListener("click", guard(async () => {
  await call("POST", "/account/auth/signout");
  location.assign("/account");
}));
$("create-key").addEventListener("submit", (ev) => {
  ev.preventDefault();
  guard(async () => {
    const scopes = allScopes.filter((sc) => $<HTMLInputElement>(`key-scope-${sc.split(":")[0]}`).checked);
    const k = await call<Key>("POST", "/account/api/keys", {
      name: $<HTMLInputElement>("key-name").value, environment: $<HTMLSelectElement>("key-env").value,
      ...(scopes.length === allScopes.length ? {} : { scopes }),
    });
    showNewKey(k);
    await renderKeys();
  })();
});
$("copy-key").addEventListener("click", guard(async () => {
  await navigator.clipboard.writeText($("new-key-value").textContent ?? "");
  say("Copied.");
}));
$("invite").addEventListener("submit", (ev) => {
  ev.preventDefault();
  guard(async () => {
    const r = await call<{ enrol_link: string }>("POST", "/account/api/admin/accounts", {
      name: $<HTMLInputElement>("invite-name").value, email: $<HTMLInputElement>("invite-email").value,
      role: $<HTMLSelectElement>("invite-role").value,
    });
    const p = $("invite-link");
    p.hidden = false;
    p.textContent = `Send this one-time link (valid 7 days): ${r.enrol_link}`;
    await renderAdmin();
  })();
});
guard(start)();
