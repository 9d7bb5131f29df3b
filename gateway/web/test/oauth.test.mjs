// Browser test of MCP authorization (issue 37): the official TypeScript MCP SDK's OAuth client
// (@modelcontextprotocol/sdk, an OAuthClientProvider on StreamableHTTPClientTransport)
// against a gateway built from this checkout (SQLite, ACCOUNT_ORIGIN on localhost: passkeys
// need a host name), with the person's steps done in Debian's chromium driven by
// playwright-core and a passkey from the DevTools protocol's WebAuthn virtual authenticator.
// The SDK learns where to authorize from the MCP endpoint's 401, registers itself (RFC
// 7591), sends the browser to /oauth/authorize; the person, signed out, signs in on the
// dashboard with the passkey, comes back to the request, approves on the consent page, and
// the browser lands on the SDK's loopback callback. The SDK exchanges the code, calls a
// catalog tool, refreshes when its access token is refused, and after the person
// disconnects the app on the dashboard it is refused and asks for the person again.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Procs, enrolAdmin, freePort, launchChromium, waitFor } from "./stack.mjs";

const repo = fileURLToPath(new URL("../../..", import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), "sensorgate-oauth-"));
let procs;
let browser;
let gw; // the gateway binary
let env; // the gateway's environment, and the CLI's
let origin = ""; // the gateway as the browser and the SDK see it (ACCOUNT_ORIGIN)
let callbackServer; // the SDK's loopback redirect target
let callbackURL = "";
let nextCallback; // resolves with the query of the next request to callbackURL
let failed = false;

// The scopes the gateway offers, and the words the consent page says for each (auth.ScopeDescription).
const scopeWords = {
  "sensors:read": "read the sensor catalog, services and projects",
  "readings:read": "read sensor readings",
  "alerts:write": "create, change and delete your alert rules",
};
const scopes = Object.keys(scopeWords);
const clientName = "sensorgate browser test (TypeScript SDK)";

/** callbackQuery waits for the browser's next visit to the loopback callback. */
function callbackQuery() {
  return new Promise((resolve) => (nextCallback = resolve));
}

before(async () => {
  procs = new Procs(tmp);
  gw = join(tmp, "gateway");
  execFileSync("go", ["build", "-o", gw, "./gateway/cmd/gateway"], { cwd: repo, stdio: "inherit" });
  const [port, cbPort] = await Promise.all([freePort(), freePort()]);
  origin = `http://localhost:${port}`;
  env = {
    SQLITE_PATH: join(tmp, "gateway.db"), SENSORGATE_ENV: "development", SYNC_INTERVAL: "0",
    SERVICE_URLS: "ocean=http://127.0.0.1:1", KEY_CACHE_TTL: "1s", LOG_FORMAT: "json", ACCOUNT_ORIGIN: origin,
  };
  procs.start("gateway", gw, ["serve"], { ...env, GATEWAY_ADDR: `127.0.0.1:${port}` });
  await waitFor("gateway", async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok);

  // The SDK's redirect URI: a native client's loopback listener (RFC 8252).
  callbackURL = `http://127.0.0.1:${cbPort}/callback`;
  callbackServer = createServer((req, res) => {
    const u = new URL(req.url, callbackURL);
    if (u.pathname !== "/callback") {
      res.writeHead(204).end(); // the browser's favicon request
      return;
    }
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>done</title><p>Connected. You can close this window.</p>");
    nextCallback?.(u.searchParams);
  });
  await new Promise((r) => callbackServer.listen(cbPort, "127.0.0.1", r));

  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await new Promise((r) => (callbackServer ? callbackServer.close(r) : r()));
  await procs?.stopAll(failed, 4000);
  if (!failed) rmSync(tmp, { recursive: true, force: true });
  else console.log("kept " + tmp);
});

/**
 * Provider is the SDK's OAuthClientProvider of a native MCP host, kept in memory: it stores
 * what the SDK hands it unchanged, and opens the authorization URL with open (the browser
 * page) while it is set; every authorization URL it was asked to open is kept.
 */
class Provider {
  constructor() {
    this.client = undefined;
    this.saved = undefined;
    this.verifier = "";
    this.states = [];
    this.redirects = [];
    this.open = undefined;
  }
  get redirectUrl() {
    return callbackURL;
  }
  get clientMetadata() {
    return {
      client_name: clientName, redirect_uris: [callbackURL], token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"],
    };
  }
  state() {
    const s = randomBytes(16).toString("hex");
    this.states.push(s);
    return s;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  async redirectToAuthorization(url) {
    this.redirects.push(url);
    if (this.open) await this.open(url);
  }
  saveCodeVerifier(v) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "tokens") this.saved = undefined;
    if (scope === "all" || scope === "client") this.client = undefined;
    if (scope === "all" || scope === "verifier") this.verifier = "";
  }
}

/** recorder is a fetch for the SDK that keeps every exchange it makes. */
function recorder(log) {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = init?.method ?? (input instanceof Request ? input.method : "GET");
    const res = await fetch(input, init);
    log.push({ method, path: url.pathname, url: url.href, status: res.status, headers: res.headers,
      body: typeof init?.body === "string" ? init.body : init?.body?.toString() ?? "" });
    return res;
  };
}

/** mcpStatus is the status of a bare tools/list at the catalog endpoint with a Bearer token. */
async function mcpStatus(token) {
  const r = await fetch(`${origin}/api/v1/catalog/mcp`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  await r.body?.cancel();
  return r.status;
}

test("TypeScript SDK OAuth client: discovery, registration, passkey sign-in, consent, tools, refresh, revocation", async () => {
  failed = true; // until the last line
  const mcpURL = new URL(`${origin}/api/v1/catalog/mcp`);
  const resource = mcpURL.href;

  // The person's passkey, enrolled from the admin's link; then signed out.
  const { context, page, errors } = await enrolAdmin(browser, gw, env, origin);
  assert.ok(await page.isVisible("#no-apps"), "no connected apps yet");
  await page.click("#signout");
  await page.waitForSelector("#signin:not([hidden])");

  // 1-3. The SDK connects without credentials: 401, discovery, registration, and the
  // browser is sent to authorize.
  const provider = new Provider();
  provider.open = (url) => page.goto(url.href);
  const log = [];
  const sdkFetch = recorder(log);
  const first = new Client({ name: "sensorgate-oauth-browser-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider, fetch: sdkFetch });
  await assert.rejects(first.connect(transport), UnauthorizedError, "connect without a token ends in the browser");

  const unauth = log[0];
  assert.equal(`${unauth.method} ${unauth.path} ${unauth.status}`, "POST /api/v1/catalog/mcp 401");
  const prmURL = `${origin}/.well-known/oauth-protected-resource/api/v1/catalog/mcp`;
  assert.equal(unauth.headers.get("www-authenticate"), `Bearer resource_metadata="${prmURL}"`);
  const step = (method, url) => log.find((e) => e.method === method && e.url === url);
  assert.equal(step("GET", prmURL)?.status, 200, "the SDK read the protected resource metadata named by the 401");
  assert.equal(step("GET", `${origin}/.well-known/oauth-authorization-server`)?.status, 200, "and the authorization server's metadata");
  const reg = step("POST", `${origin}/oauth/register`);
  assert.equal(reg?.status, 201, "the SDK registered itself (RFC 7591)");
  assert.deepEqual(JSON.parse(reg.body).redirect_uris, [callbackURL]);
  assert.match(provider.client?.client_id ?? "", /^sgc_/, `registered client ${JSON.stringify(provider.client)}`);
  const clientID = provider.client.client_id;
  assert.equal(provider.client.client_name, clientName);

  assert.equal(provider.redirects.length, 1);
  const az = provider.redirects[0];
  assert.equal(az.origin + az.pathname, `${origin}/oauth/authorize`);
  const azq = az.searchParams;
  assert.equal(azq.get("client_id"), clientID);
  assert.equal(azq.get("redirect_uri"), callbackURL);
  assert.equal(azq.get("code_challenge_method"), "S256");
  assert.ok(azq.get("code_challenge"), "a PKCE challenge");
  assert.equal(azq.get("resource"), resource, "RFC 8707 resource of the MCP endpoint");
  assert.equal(azq.get("state"), provider.states[0]);
  assert.deepEqual(azq.get("scope").split(" ").sort(), [...scopes].sort());

  // Not signed in: the gateway sent the browser to the dashboard's sign-in.
  assert.equal(new URL(page.url()).pathname, "/account", `the browser is at ${page.url()}`);
  await page.waitForSelector("#signin:not([hidden])");
  await page.click("#passkey-signin");
  // The dashboard returns the person to the authorization request: the consent page.
  await page.waitForURL((u) => u.pathname === "/oauth/authorize" && u.searchParams.get("state") === provider.states[0]);
  assert.equal(await page.textContent("h1"), `Connect ${clientName}?`);
  const body = (await page.textContent("body")).replace(/\s+/g, " ");
  assert.match(body, /Signed in as Ada \(ada@example\.org\)\./);
  assert.ok(body.includes(`you go back to 127.0.0.1:${new URL(callbackURL).port}`), body);
  assert.ok(body.includes(`Only at ${resource}.`), body);
  const items = await page.locator("li").allTextContents();
  assert.equal(items.length, scopes.length, `scopes listed: ${items}`);
  for (const sc of scopes) {
    assert.ok(items.some((t) => t.startsWith(`${sc}: ${scopeWords[sc]}`)), `the consent page names ${sc} in words: ${items}`);
  }
  assert.equal(await page.locator("script").count(), 0, "the consent page runs no script");

  // Approve: the browser lands on the SDK's loopback callback with the code and the state.
  const arrived = callbackQuery();
  await page.click("button[name=decision][value=approve]");
  const cb = await arrived;
  await page.waitForURL((u) => u.href.startsWith(callbackURL + "?"));
  assert.equal(cb.get("state"), provider.states[0], "the state comes back unchanged");
  assert.equal(cb.get("iss"), origin, "RFC 9207 iss");
  assert.ok(cb.get("code"), "a code");
  assert.equal(cb.get("error"), null);

  // 4. The SDK exchanges the code (PKCE verifier, resource) for tokens.
  await transport.finishAuth(cb.get("code"));
  const exchange = log.findLast((e) => e.path === "/oauth/token");
  assert.equal(exchange.status, 200);
  const ex = new URLSearchParams(exchange.body);
  assert.equal(ex.get("grant_type"), "authorization_code");
  assert.equal(ex.get("code_verifier"), provider.verifier);
  assert.equal(ex.get("resource"), resource);
  const granted = provider.tokens();
  assert.match(granted?.access_token ?? "", /^ory_at_/);
  assert.match(granted.refresh_token ?? "", /^ory_rt_/);
  assert.equal(granted.token_type.toLowerCase(), "bearer");
  assert.ok(granted.expires_in > 0 && granted.expires_in <= 3600, `expires_in ${granted.expires_in}`);

  // 5. Connected with the token: tools/list and a catalog tool.
  const client = new Client({ name: "sensorgate-oauth-browser-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(mcpURL, { authProvider: provider, fetch: sdkFetch }));
  const tools = (await client.listTools()).tools.map((t) => t.name);
  for (const name of ["describe_catalog", "search_sensors", "describe_sensor", "get_readings"]) {
    assert.ok(tools.includes(name), `tools/list ${tools} has ${name}`);
  }
  const search = async () => {
    const r = await client.callTool({ name: "search_sensors", arguments: { limit: 5 } });
    assert.ok(!r.isError, `search_sensors: ${JSON.stringify(r.content)}`);
    assert.ok(Array.isArray(r.structuredContent?.sensors), `search_sensors answer ${JSON.stringify(r.structuredContent)}`);
  };
  await search();
  assert.equal(await mcpStatus(granted.access_token), 200);
  const rest = await fetch(`${origin}/api/v1/services`, { headers: { Authorization: `Bearer ${granted.access_token}` } });
  await rest.body?.cancel();
  assert.equal(rest.status, 401, "the token is bound to the MCP endpoint it was asked for, not the whole API");

  // 6. Refresh: the saved access token is refused (401), so the SDK uses its refresh token
  // and the call goes through with a new pair.
  const sent = log.length;
  provider.saved = { ...granted, access_token: "ory_at_refused.refused" };
  await search();
  const since = log.slice(sent);
  assert.ok(since.some((e) => e.path === mcpURL.pathname && e.status === 401), "the refused token got 401");
  const refresh = since.find((e) => e.path === "/oauth/token");
  assert.equal(refresh?.status, 200, "the SDK refreshed");
  assert.equal(new URLSearchParams(refresh.body).get("grant_type"), "refresh_token");
  assert.equal(new URLSearchParams(refresh.body).get("refresh_token"), granted.refresh_token);
  const renewed = provider.tokens();
  assert.match(renewed.access_token, /^ory_at_/);
  assert.notEqual(renewed.access_token, granted.access_token, "a new access token");
  assert.notEqual(renewed.refresh_token, granted.refresh_token, "the refresh token rotated");
  assert.equal(provider.redirects.length, 1, "no new authorization was needed");
  assert.equal(await mcpStatus(renewed.access_token), 200);
  await waitFor("the access token before the refresh is retired", async () => (await mcpStatus(granted.access_token)) === 401, 5000);

  // 7. The person disconnects the app on the dashboard.
  provider.open = undefined; // from here on nobody is at the browser for the SDK
  await page.goto(`${origin}/account`);
  await page.waitForSelector("#dashboard:not([hidden])");
  const row = page.locator(`#apps tr[data-app="${clientID}"]`);
  await row.waitFor();
  const rowText = await row.textContent();
  assert.ok(rowText.includes(clientName), `connected app row: ${rowText}`);
  for (const sc of scopes) assert.ok(rowText.includes(sc), `connected app row names ${sc}: ${rowText}`);
  await row.locator("button", { hasText: "Disconnect" }).click();
  await row.waitFor({ state: "detached" });
  assert.ok((await page.textContent("#status")).startsWith(`Disconnected ${clientName}`), "the dashboard says so");
  assert.ok(await page.isVisible("#no-apps"), "no connected apps left");

  // 8. The token is refused, and the SDK's refresh too: it asks for the person again.
  await waitFor("the disconnected app's token is refused", async () => (await mcpStatus(renewed.access_token)) === 401, 3000);
  const before8 = log.length;
  await assert.rejects(client.callTool({ name: "search_sensors", arguments: { limit: 5 } }), UnauthorizedError);
  const tail = log.slice(before8);
  assert.ok(tail.some((e) => e.path === mcpURL.pathname && e.status === 401), "the call got 401");
  const denied = tail.find((e) => e.path === "/oauth/token");
  assert.equal(denied?.status, 400, "the refresh of a revoked grant is refused");
  assert.equal(new URLSearchParams(denied.body).get("refresh_token"), renewed.refresh_token);
  assert.equal(provider.redirects.length, 2, "the SDK starts a new authorization: only the person can let it in again");
  assert.equal(provider.tokens(), undefined, "the SDK dropped the refused tokens");

  await client.close();
  assert.deepEqual(errors, []);
  await context.close();
  failed = false;
});
