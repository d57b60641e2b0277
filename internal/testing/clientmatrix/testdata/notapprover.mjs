// The official 2026-07-28 Tasks client (@modelcontextprotocol/client with
// @modelcontextprotocol/ext-tasks) answering a question it may not answer.
// Usage: node notapprover.mjs <mcp url>. conformance-approval-approvers
// asks only urn:conformance:listed-approver; this client (anonymous) answers
// it anyway. The server refuses the tasks/update with -32602 and the
// execution settles with that error. It prints one JSON line
// {refusal: {code, message}, answerers, asked, error}: answerers is the
// question's params._meta["io.openwop/answerers"] as the client saw it.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createApplicationInputHandler, createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";
import * as v2 from "@modelcontextprotocol/ext-tasks/core/v2";
import { rawDispatcher } from "./dispatch.mjs";

const [url] = process.argv.slice(2);
const VERSION = "2026-07-28";
const clientInfo = { name: "clientmatrix-notapprover", version: "0" };
const clientCapabilities = { elicitation: { form: {} }, extensions: { [v2.TASKS_EXTENSION_ID_V2]: {} } };

// One POST per request with the routing headers (dispatch.mjs).
const rawDispatch = rawDispatcher(url, VERSION);

const out = { case: "notapprover", asked: 0 };
const errorOf = (e) => ({ code: e?.code ?? e?.cause?.code, message: String(e?.message ?? e) });
const client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: VERSION } } });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const session = createTaskSessionFromClient(client, {
    endpointId: "clientmatrix-notapprover",
    rawDispatch,
    v2RequestFraming: { protocolVersion: VERSION, clientInfo, clientCapabilities },
    onError: (e) => { out.backgroundError ??= errorOf(e); },
    onInputRequest: createApplicationInputHandler({
      elicitation: async (request) => {
        out.asked++;
        out.answerers = request.params?._meta?.["io.openwop/answerers"] ?? null;
        return { action: "accept", content: { action: "accept" } };
      },
    }),
  });
  const call = await session.callTool("conformance-approval-approvers", {}, { task: { preference: "require" } });
  try {
    const { outcome } = await call.settle();
    out.status = outcome.status;
    if (outcome.status === "failed") out.refusal = errorOf(outcome.error);
  } catch (e) {
    out.refusal = errorOf(e);
  }
  await call.detach().catch(() => {});
  await session.close();
} catch (e) {
  out.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(out));
