// The TypeScript SDK v1 client (@modelcontextprotocol/sdk) calling a tool
// whose run's result does not match the tool's outputSchema. Usage: node
// mismatch.mjs <mcp url>. The server answers such a result as a tool error
// without structuredContent (output_schema_mismatch); the client, which
// validates structuredContent against outputSchema, accepts that answer
// (an isError result needs none). It prints one JSON line {outputSchema,
// isError, text, structured, error}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url] = process.argv.slice(2);
const out = { case: "mismatch" };
const client = new Client({ name: "clientmatrix-mismatch", version: "0" });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const { tools } = await client.listTools();
  out.outputSchema = tools.find((t) => t.name === "delay_mismatch")?.outputSchema !== undefined;
  const res = await client.callTool({ name: "delay_mismatch", arguments: { delayMs: 0 } });
  out.isError = res.isError === true;
  out.structured = res.structuredContent !== undefined;
  out.text = (res.content ?? []).map((c) => c.text ?? "").join("\n");
} catch (e) {
  out.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(out));
