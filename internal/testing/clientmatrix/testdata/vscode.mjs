// A client shaped like VS Code's task flow with a 2025-11-25 server, on
// plain fetch in an HTTP session: initialize declaring elicitation, support
// for task-augmented tool calls detected through the server's
// capabilities.tasks.requests.tools.call, tools/call with params.task, then
// tasks/get polled at the task's pollInterval; a task that is
// input_required is handed to tasks/result, whose stream carries the
// question as elicitation/create (answered in the session) and then the
// result; a completed one is read with tasks/result. Usage: node vscode.mjs
// <mcp url> <case>. It prints one JSON line {case, kind, status, text,
// isError, polls, asked, handedOver (the status tasks/result was called
// at), error}.
const [url, which] = process.argv.slice(2);
const VERSION = "2025-11-25";
const RELATED = "io.modelcontextprotocol/related-task";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const textOf = (r) => (r?.content ?? []).map((c) => c.text ?? "").join("\n");
const delayMs = Number(process.env.CLIENTMATRIX_DELAY_MS ?? 65000);

let session;
let nextId = 1;

function post(message) {
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  if (session) Object.assign(headers, { "Mcp-Session-Id": session, "MCP-Protocol-Version": VERSION });
  return fetch(url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", ...message }) });
}

// Reads the JSON-RPC messages of a response (a JSON body or an event
// stream, as they arrive) and hands each server request to onRequest; it
// returns the answer to id.
async function answerOf(resp, id, onRequest) {
  if (!resp.ok) throw new Error(`HTTP ${resp.status} ${(await resp.text()).slice(0, 300)}`);
  if (!(resp.headers.get("content-type") ?? "").includes("text/event-stream")) return resp.json();
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of resp.body) {
    buf += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buf.search(/\r?\n\r?\n/)) >= 0) {
      const event = buf.slice(0, end);
      buf = buf.slice(end).replace(/^\r?\n\r?\n/, "");
      const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5)).join("\n");
      if (!data.trim()) continue;
      const m = JSON.parse(data);
      if (m.id === id && !m.method) return m;
      if (m.method && m.id !== undefined) await onRequest(m);
    }
  }
  throw new Error(`the stream ended without the answer to request ${id}`);
}

async function request(method, params = {}, onRequest = async (m) => { throw new Error(`unexpected server request ${m.method}`); }) {
  const id = nextId++;
  const resp = await post({ id, method, params });
  if (method === "initialize") session = resp.headers.get("mcp-session-id");
  const msg = await answerOf(resp, id, onRequest);
  if (msg.error) throw new Error(`${method}: JSON-RPC error ${msg.error.code} ${msg.error.message}`);
  return msg.result;
}

const out = { case: which, polls: 0 };
try {
  const init = await request("initialize", {
    protocolVersion: VERSION,
    capabilities: { elicitation: { form: {} }, tasks: { cancel: {}, list: {} } },
    clientInfo: { name: "clientmatrix-vscode", version: "0" },
  });
  if (!session) throw new Error("initialize answered no Mcp-Session-Id");
  await post({ method: "notifications/initialized" });
  // What VS Code checks before it sends params.task.
  if (!init.capabilities?.tasks?.requests?.tools?.call) {
    throw new Error(`the server does not declare task-augmented tools/call: ${JSON.stringify(init.capabilities)}`);
  }
  const calls = {
    approve: ["publish_report", { title: "Matrix", topic: "vscode" }],
    long: ["delay", { delayMs }],
  };
  const [tool, args] = calls[which];
  const { tools } = await request("tools/list");
  const listed = tools.find((t) => t.name === tool);
  if (!listed || (listed.execution?.taskSupport ?? "forbidden") === "forbidden") {
    throw new Error(`tools/list: ${tool} does not support tasks: ${JSON.stringify(listed)}`);
  }
  const created = await request("tools/call", { name: tool, arguments: args, task: { ttl: 3_600_000 } });
  if (!created.task?.taskId) throw new Error(`tools/call answered no task: ${JSON.stringify(created)}`);
  out.kind = "task";
  const { taskId } = created.task;
  let task = created.task;
  while (task.status === "working") {
    await sleep(task.pollInterval ?? 1000);
    task = await request("tasks/get", { taskId });
    out.polls++;
  }
  out.handedOver = task.status;
  // input_required or terminal: tasks/result asks the question on its
  // stream and answers the result.
  const answer = async (m) => {
    if (m.method !== "elicitation/create" || m.params?._meta?.[RELATED]?.taskId !== taskId) {
      throw new Error(`unexpected server request ${JSON.stringify(m).slice(0, 300)}`);
    }
    out.asked = m.params.message;
    const resp = await post({ id: m.id, result: { action: "accept", content: { action: "accept" } } });
    if (resp.status !== 202) throw new Error(`the answer got HTTP ${resp.status}`);
  };
  const result = await request("tasks/result", { taskId }, answer);
  if (result._meta?.[RELATED]?.taskId !== taskId) throw new Error(`tasks/result without the related task: ${JSON.stringify(result._meta)}`);
  task = await request("tasks/get", { taskId });
  out.status = task.status;
  out.isError = result.isError === true;
  out.text = textOf(result);
} catch (e) {
  out.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
}
console.log(JSON.stringify(out));
