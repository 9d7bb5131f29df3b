// Drives sensorgate MCP endpoints with the official MCP TypeScript SDK client, the way a
// Node MCP host does: connect (initialize + notifications/initialized), tools/list,
// tools/call, ping. Used by gateway/mcp's tests; prints one JSON array of results.
//
//   node client.mjs <base-url> <api-key> '<cases JSON: [{scope, path, tool, args}]>'
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [base, key, casesJSON] = process.argv.slice(2);
if (!base || !key || !casesJSON) {
  console.error("usage: node client.mjs <base-url> <api-key> '<cases JSON>'");
  process.exit(2);
}
const results = [];
for (const c of JSON.parse(casesJSON)) {
  const client = new Client({ name: "sensorgate-node-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(base + c.path), {
    requestInit: { headers: { "x-api-key": key } },
  });
  const r = { scope: c.scope, tool: c.tool };
  try {
    await client.connect(transport);
    r.protocolVersion = transport.protocolVersion;
    r.server = client.getServerVersion();
    r.tools = (await client.listTools()).tools.map((t) => t.name);
    // callTool validates structuredContent against the tool's outputSchema.
    const res = await client.callTool({ name: c.tool, arguments: c.args });
    r.isError = Boolean(res.isError);
    r.structured = res.structuredContent !== undefined;
    r.text = (res.content?.[0]?.text ?? "").slice(0, 300);
    await client.ping();
    r.ok = true;
  } catch (e) {
    r.error = String(e?.stack ?? e);
  }
  await client.close().catch(() => {});
  results.push(r);
}
console.log(JSON.stringify(results));
