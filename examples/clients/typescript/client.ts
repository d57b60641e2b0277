// A client of the Tasks flow (MCP 2026-07-28, io.modelcontextprotocol/tasks)
// on the official TypeScript SDK and its Tasks extension. Against the stock
// server it calls publish_report, which asks for approval; answers it with
// an action the question does not offer (refused with -32602), resumes the
// task and approves it; then starts delay and cancels it.
//
//   npm install && node client.ts [http://127.0.0.1:8080/mcp]
//
// Set OPENWOP_API_KEY when the server has API keys configured.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createApplicationInputHandler, createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";
import type { RawClientDispatch, TaskExecutionEvent } from "@modelcontextprotocol/ext-tasks/client";
import type { JsonValue } from "@modelcontextprotocol/ext-tasks/core";

const url = process.argv[2] ?? "http://127.0.0.1:8080/mcp";
const auth: Record<string, string> = process.env.OPENWOP_API_KEY ? { Authorization: `Bearer ${process.env.OPENWOP_API_KEY}` } : {};
const VERSION = "2026-07-28";
const clientInfo = { name: "openwop-example-client", version: "1" };
const clientCapabilities = { elicitation: { form: {} }, extensions: { "io.modelcontextprotocol/tasks": {} } };

// The SDK's own transport does not send task requests in the 2026-07-28
// shape, so the extension asks the application for a raw request path: one
// POST per request, with the headers the server routes on (Mcp-Method,
// Mcp-Name). The extension adds the _meta (version, client info, capabilities).
let nextId = 1;
const rawDispatch: RawClientDispatch = async (request, options) => {
  const req = request as { method: string; params?: Record<string, JsonValue> };
  const name = req.method === "tools/call" ? req.params?.name : req.params?.taskId;
  const id = nextId++;
  const resp = await fetch(url, {
    method: "POST",
    signal: options?.signal,
    body: JSON.stringify({ jsonrpc: "2.0", id, ...req }),
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": VERSION,
      "Mcp-Method": req.method,
      ...(typeof name === "string" ? { "Mcp-Name": name } : {}),
      ...auth,
      ...(options?.context?.headers ?? {}),
    },
  });
  // JSON, or an SSE stream whose data lines carry the response.
  const body = await resp.text();
  const msgs = resp.headers.get("content-type")?.includes("text/event-stream")
    ? body.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5)))
    : [JSON.parse(body)];
  const msg = msgs.find((m) => m.id === id);
  if (!msg) throw new Error(`${req.method}: HTTP ${resp.status} without a response: ${body.slice(0, 200)}`);
  return msg.error ? { kind: "error", error: msg.error } : { kind: "result", result: msg.result };
};

// How the application answers a question: the first time with an action
// the approval does not offer, then with "accept".
let asked = 0;
const answer = async (request: { params: Record<string, JsonValue> }) => {
  asked++;
  const action = asked === 1 ? "maybe" : "accept";
  console.log(`asked: ${request.params.message}; answering ${action}`);
  return { action: "accept" as const, content: { action } };
};

// Prints each status the extension reads from tasks/get (it polls at the
// server's pollIntervalMs).
const show = (ev: TaskExecutionEvent<unknown>) => {
  if (ev.type === "task") console.log(`task ${ev.task.status} (${ev.task.statusMessage}), pollIntervalMs ${ev.task.suggestedPollIntervalMs}`);
};

const client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: VERSION } } });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }));
const session = createTaskSessionFromClient(client, {
  endpointId: url,
  rawDispatch,
  v2RequestFraming: { protocolVersion: VERSION, clientInfo, clientCapabilities },
  onInputRequest: createApplicationInputHandler({
    elicitation: answer,
    sampling: () => Promise.reject(new Error("this client does no sampling")),
    roots: () => ({ roots: [] }),
  }),
});
try {
  // 1. Call a tool that asks a question; the extension polls and answers.
  const call = await session.callTool("publish_report", { title: "Q3", topic: "sales" }, { task: { preference: "require" } });
  if (call.kind !== "task") throw new Error("publish_report answered without a task");
  console.log(`called publish_report: task ${call.handle.taskId}`);
  const reference = call.serializeReference(); // store it to resume later
  const first = await call.settle({ onEvent: show }).catch((e) => ({ outcome: { status: "failed" as const, error: e } }));
  if (first.outcome.status !== "failed") throw new Error(`the refused answer settled ${first.outcome.status}`);
  const err = first.outcome.error as { code?: number; message: string };
  console.log(`refused: ${err.code} ${err.message}`);

  // 2. The question stays open: resume the task and answer again.
  await call.detach();
  const resumed = await session.resumeTask(reference);
  const { outcome } = await resumed.settle({ onEvent: show });
  if (outcome.status !== "completed") throw new Error(`publish_report ended ${outcome.status}`);
  const result = outcome.result as { content?: { text?: string }[] };
  console.log(`completed: ${(result.content ?? []).map((c) => c.text).join(" ")}`);

  // 3. Start a long run and cancel it (tasks/cancel). The execution ends
  // at the server's ack; the task's controller polls tasks/get until the
  // run has stopped.
  const delay = await session.callTool("delay", { delayMs: 600000 }, { task: { preference: "require" } });
  if (delay.kind !== "task") throw new Error("delay answered without a task");
  console.log(`called delay: task ${delay.handle.taskId}; cancelling it`);
  await delay.cancel();
  const ended = await session.task(delay.handle.taskId).result();
  console.log(`delay ended ${ended.status}`);
  if (ended.status !== "cancelled") process.exitCode = 1;
} finally {
  await session.close();
  await client.close();
}
