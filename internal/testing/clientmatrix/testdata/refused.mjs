// The official 2026-07-28 Tasks client (@modelcontextprotocol/client with
// @modelcontextprotocol/ext-tasks) answering a question off its schema.
// Usage: node refused.mjs <mcp url>. confirm_delete asks for a boolean
// "confirm"; the first answer gives the string "yes". The server refuses
// the tasks/update with -32602 and the execution settles with that error;
// the client then resumes the task from its serialized reference, is asked
// the same question again, answers true, and the task completes. It prints
// one JSON line {refusal: {code, message}, asked, status, text, isError, error}.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createApplicationInputHandler, createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";
import * as v2 from "@modelcontextprotocol/ext-tasks/core/v2";
import { rawDispatcher } from "./dispatch.mjs";

const [url] = process.argv.slice(2);
const VERSION = "2026-07-28";
const clientInfo = { name: "clientmatrix-refused", version: "0" };
const clientCapabilities = { elicitation: { form: {} }, extensions: { [v2.TASKS_EXTENSION_ID_V2]: {} } };

// One POST per request with the routing headers (dispatch.mjs).
const rawDispatch = rawDispatcher(url, VERSION);

const out = { case: "refused", asked: [] };
const errorOf = (e) => ({ code: e?.code ?? e?.cause?.code, message: String(e?.message ?? e) });
const client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: VERSION } } });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const session = createTaskSessionFromClient(client, {
    endpointId: "clientmatrix-refused",
    rawDispatch,
    v2RequestFraming: { protocolVersion: VERSION, clientInfo, clientCapabilities },
    onError: (e) => { out.backgroundError ??= errorOf(e); },
    onInputRequest: createApplicationInputHandler({
      elicitation: async (request) => {
        out.asked.push(request.params?.message);
        // Off the schema first, then the fitting answer.
        return out.asked.length === 1 ? { action: "accept", content: { confirm: "yes" } } : { action: "accept", content: { confirm: true } };
      },
    }),
  });
  const first = await session.callTool("confirm_delete", { filename: "matrix.txt" }, { task: { preference: "require" } });
  const reference = first.serializeReference();
  try {
    const { outcome } = await first.settle();
    out.firstStatus = outcome.status;
    if (outcome.status === "failed") out.refusal = errorOf(outcome.error);
  } catch (e) {
    out.refusal = errorOf(e);
  }
  await first.detach().catch(() => {});
  const again = await session.resumeTask(reference);
  const { outcome } = await again.settle();
  out.status = outcome.status;
  if (outcome.status === "completed") {
    out.isError = outcome.result.isError === true;
    out.text = (outcome.result.content ?? []).map((c) => c.text ?? "").join("\n");
  }
  await session.close();
} catch (e) {
  out.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(out));
