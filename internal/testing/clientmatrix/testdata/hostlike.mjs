// A client that behaves as Claude Code does with a 2026-07-28 server, on
// plain fetch: server/discover first; the Tasks extension declared on every
// request (tools/list and tasks/* too); pollIntervalMs honoured between
// tasks/get; a question of a task answered by tasks/update; and any result
// without a valid resultType taken as an error. Usage: node hostlike.mjs
// <mcp url> <case>. It prints one JSON line {case, kind, status, text,
// isError, polls, asked, error}.
const [url, which] = process.argv.slice(2);
const VERSION = "2026-07-28";
const TASKS = "io.modelcontextprotocol/tasks";
const meta = {
  "io.modelcontextprotocol/protocolVersion": VERSION,
  "io.modelcontextprotocol/clientInfo": { name: "clientmatrix-hostlike", version: "0" },
  "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS]: {} } },
};
const resultTypes = new Set(["complete", "task", "input_required"]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const textOf = (r) => (r?.content ?? []).map((c) => c.text ?? "").join("\n");

let nextId = 1;
async function request(method, params = {}) {
  const id = nextId++;
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": VERSION,
    "Mcp-Method": method,
  };
  const name = method === "tools/call" ? params.name : params.taskId;
  if (typeof name === "string") headers["Mcp-Name"] = name;
  const resp = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: meta } }),
  });
  const body = await resp.text();
  let msg;
  if ((resp.headers.get("content-type") ?? "").includes("text/event-stream")) {
    for (const line of body.split(/\r?\n/)) {
      if (line.startsWith("data:")) {
        const m = JSON.parse(line.slice(5));
        if (m.id === id) msg = m;
      }
    }
  } else {
    msg = JSON.parse(body);
  }
  if (!msg) throw new Error(`${method}: no response in HTTP ${resp.status} ${body.slice(0, 300)}`);
  if (msg.error) throw new Error(`${method}: JSON-RPC error ${msg.error.code} ${msg.error.message}`);
  if (!resultTypes.has(msg.result?.resultType)) {
    throw new Error(`${method}: result without a valid resultType: ${JSON.stringify(msg.result).slice(0, 300)}`);
  }
  return msg.result;
}

const out = { case: which, polls: 0 };
try {
  const discovered = await request("server/discover");
  if (!(discovered.supportedVersions ?? []).includes(VERSION)) throw new Error(`discover: ${JSON.stringify(discovered)}`);
  const { tools } = await request("tools/list");
  const calls = {
    short: ["delay", { delayMs: 5 }],
    long: ["slow_compute", { seconds: 3, label: "host-like" }],
    approve: ["publish_report", { title: "Matrix", topic: "host-like" }],
  };
  const [tool, args] = calls[which];
  if (!tools.some((t) => t.name === tool)) throw new Error(`tools/list lacks ${tool}`);
  let res = await request("tools/call", { name: tool, arguments: args });
  out.kind = res.resultType;
  if (res.resultType === "task") {
    const taskId = res.taskId;
    let task = res;
    while (task.status === "working" || task.status === "input_required") {
      if (task.status === "input_required") {
        const [key, req] = Object.entries(task.inputRequests ?? {})[0] ?? [];
        if (!key) throw new Error(`input_required without inputRequests: ${JSON.stringify(task)}`);
        out.asked = req.params?.message;
        await request("tasks/update", { taskId, inputResponses: { [key]: { action: "accept", content: { action: "accept" } } } });
      } else {
        await sleep(task.pollIntervalMs ?? 1000);
      }
      task = await request("tasks/get", { taskId });
      out.polls++;
    }
    out.status = task.status;
    res = task.result ?? {};
  } else {
    out.status = "completed";
  }
  out.isError = res.isError === true;
  out.text = textOf(res);
} catch (e) {
  out.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
}
console.log(JSON.stringify(out));
