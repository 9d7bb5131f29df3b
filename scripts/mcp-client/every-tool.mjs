// Lists and calls every tool of every given sensorgate MCP scope with the official MCP
// TypeScript SDK client (callTool validates each structuredContent against the tool's
// outputSchema), and at scopes that serve resources lists and reads them. Used by
// gateway/mcp's TestRealGateway; prints one JSON array of results, one per tool.
//
//   node every-tool.mjs <base-url> <api-key> '<JSON: [{scope, path, args: {tool: arguments}}]>'
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [base, key, scopesJSON] = process.argv.slice(2);
if (!base || !key || !scopesJSON) {
  console.error("usage: node every-tool.mjs <base-url> <api-key> '<scopes JSON>'");
  process.exit(2);
}
const results = [];
for (const s of JSON.parse(scopesJSON)) {
  const client = new Client({ name: "sensorgate-every-tool", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(base + s.path), {
    requestInit: { headers: { "x-api-key": key } },
  });
  try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    let createdRule = "";
    for (const t of tools) {
      const r = { scope: s.scope, tool: t.name, title: t.title ?? t.annotations?.title ?? "",
        readOnly: t.annotations?.readOnlyHint === true, openWorld: typeof t.annotations?.openWorldHint === "boolean",
        outputSchema: t.outputSchema !== undefined };
      try {
        // "__created_rule__" stands for the id of the rule create_alert_rule made earlier.
        const args = JSON.parse(JSON.stringify(s.args[t.name] ?? {}).replaceAll("__created_rule__", createdRule));
        const res = await client.callTool({ name: t.name, arguments: args });
        if (t.name === "create_alert_rule") createdRule = res.structuredContent?.id ?? "";
        r.isError = Boolean(res.isError);
        r.structured = res.structuredContent !== undefined;
        r.text = (res.content?.[0]?.text ?? "").slice(0, 300);
        r.ok = true;
      } catch (e) {
        r.error = String(e?.message ?? e);
      }
      results.push(r);
    }
    if (client.getServerCapabilities()?.resources) {
      const r = { scope: s.scope, tool: "resources" };
      try {
        const { resources } = await client.listResources();
        const { resourceTemplates } = await client.listResourceTemplates();
        const read = [];
        for (const res of resources) read.push((await client.readResource({ uri: res.uri })).contents.length);
        for (const tpl of resourceTemplates) {
          // A query template ({?...}) is read without its query.
          const uri = tpl.uriTemplate.replace("{sensor_id}", encodeURIComponent(s.args.__sensor ?? "")).replace(/\{\?[^}]*\}$/, "");
          read.push((await client.readResource({ uri })).contents.length);
        }
        r.ok = read.length === resources.length + resourceTemplates.length && read.every((n) => n === 1);
        r.structured = true;
        r.text = `${resources.length} resources, ${resourceTemplates.length} templates read`;
      } catch (e) {
        r.error = String(e?.message ?? e);
      }
      results.push(r);
    }
    if (s.errorProbe) {
      // A failing tool is a result with isError and the reason in its text, which the SDK
      // hands to the caller (it must not throw over the output schema).
      const r = { scope: s.scope, tool: "error:" + s.errorProbe.tool };
      try {
        const res = await client.callTool({ name: s.errorProbe.tool, arguments: s.errorProbe.args });
        r.isError = Boolean(res.isError);
        r.text = (res.content?.[0]?.text ?? "").slice(0, 300);
        r.ok = true;
      } catch (e) {
        r.error = String(e?.message ?? e);
      }
      results.push(r);
    }
  } catch (e) {
    results.push({ scope: s.scope, tool: "(connect)", error: String(e?.message ?? e) });
  }
  await client.close().catch(() => {});
}
console.log(JSON.stringify(results));
