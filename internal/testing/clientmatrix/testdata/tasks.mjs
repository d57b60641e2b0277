// The official 2026-07-28 Tasks client: @modelcontextprotocol/client with
// @modelcontextprotocol/ext-tasks. Usage: node tasks.mjs <mcp url> <case>.
// It prints one JSON line {case, status, text, isError, violations, error}:
// the outcome as the client's own API reports it, and every message it
// received that does not validate against the Tasks extension's schemas.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createApplicationInputHandler, createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";
import * as v2 from "@modelcontextprotocol/ext-tasks/core/v2";
import { rawDispatcher } from "./dispatch.mjs";

const [url, which] = process.argv.slice(2);
const VERSION = "2026-07-28";
const clientInfo = { name: "clientmatrix-ext-tasks", version: "0" };
const clientCapabilities = { elicitation: { form: {} }, extensions: { [v2.TASKS_EXTENSION_ID_V2]: {} } };

// Every message received, checked against the Tasks extension's schemas.
const violations = [];
function validate(method, msg) {
  const check = (schema, value, what) => {
    const r = schema.safeParse(value);
    if (!r.success) violations.push({ method, what, issues: JSON.stringify(r.error.issues).slice(0, 500), value: JSON.stringify(value).slice(0, 500) });
  };
  if (msg.error) {
    check(v2.ErrorV2Schema, msg.error, "error");
    return;
  }
  const res = msg.result;
  switch (method) {
    case "tools/call":
      if (res.resultType === "task") check(v2.CreateTaskResultV2Schema, res, "CreateTaskResult");
      else if (res.resultType === "input_required") check(v2.InputRequiredCallToolResultV2Schema, res, "InputRequiredResult");
      else check(v2.CallToolResultV2Schema, res, "CallToolResult");
      break;
    case "tasks/get":
      check(v2.GetTaskResultV2Schema, res, "GetTaskResult");
      // The inlined result is a complete CallToolResult in its own right.
      if (res.status === "completed") check(v2.CallToolResultV2Schema, res.result, "GetTaskResult.result");
      break;
    case "tasks/update":
      check(v2.UpdateTaskResultV2Schema, res, "UpdateTaskResult");
      break;
    case "tasks/cancel":
      check(v2.CancelTaskResultV2Schema, res, "CancelTaskResult");
      break;
  }
}

// One POST per request with the routing headers (dispatch.mjs).
const rawDispatch = rawDispatcher(url, VERSION, validate);

// The answer to the run's question, per case.
function answer(request) {
  switch (which) {
    case "approve":
      return { action: "accept", content: { action: "accept" } };
    case "reject":
      return { action: "accept", content: { action: "reject" } };
    case "decline":
      return { action: "decline" };
  }
  throw new Error(`case ${which} asked no question, got ${JSON.stringify(request)}`);
}

const out = { case: which, violations };
const client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: VERSION } } });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const session = createTaskSessionFromClient(client, {
    endpointId: "clientmatrix",
    rawDispatch,
    v2RequestFraming: { protocolVersion: VERSION, clientInfo, clientCapabilities },
    onInputRequest: createApplicationInputHandler({
      elicitation: async (request) => {
        out.asked = request.params?.message;
        return answer(request);
      },
    }),
  });
  const calls = {
    approve: ["publish_report", { title: "Matrix", topic: "ext-tasks" }],
    reject: ["publish_report", { title: "Matrix", topic: "ext-tasks reject" }],
    decline: ["publish_report", { title: "Matrix", topic: "ext-tasks decline" }],
    delay: ["delay", { delayMs: Number(process.env.CLIENTMATRIX_DELAY_MS ?? 65000) }],
    failed: ["failing_job", {}],
    cancel: ["slow_compute", { seconds: 120, label: "cancel me" }],
  };
  const [tool, args] = calls[which];
  const execution = await session.callTool(tool, args, { task: { preference: "prefer" } });
  out.kind = execution.kind;
  if (which === "cancel") {
    // Cancel once the task is observed running.
    const settled = execution.settle({
      onEvent: async (ev) => {
        if (ev.type === "task" && ev.task.status === "working" && !out.cancelRequested) {
          out.cancelRequested = true;
          await execution.cancel();
        }
      },
    });
    const { outcome } = await settled;
    out.status = outcome.status;
  } else {
    const { outcome } = await execution.settle();
    out.status = outcome.status;
    if (outcome.status === "completed") {
      out.isError = outcome.result.isError === true;
      out.text = (outcome.result.content ?? []).map((c) => c.text ?? "").join("\n");
    } else if (outcome.status === "failed") {
      out.error = String(outcome.error?.message ?? outcome.error);
    }
  }
  await session.close();
} catch (e) {
  out.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(out));
