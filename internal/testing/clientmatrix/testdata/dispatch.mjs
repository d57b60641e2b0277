// The raw dispatch the matrix's 2026-07-28 Tasks clients give
// createTaskSessionFromClient: one POST per request with the routing
// headers (Mcp-Method, and Mcp-Name for a tool call or a task method), its
// JSON-RPC answer read from a JSON body or an event stream. onMessage sees
// every answer before it is returned (tasks.mjs checks its shape there).
export function rawDispatcher(url, version, onMessage = () => {}) {
  let nextId = 1;
  return async function rawDispatch(request, options) {
    const id = `raw-${nextId++}`;
    const params = request.params ?? {};
    const headers = {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": version,
      "Mcp-Method": request.method,
      ...(options?.context?.headers ?? {}),
    };
    const name = request.method === "tools/call" ? params.name : params.taskId;
    if (typeof name === "string") headers["Mcp-Name"] = name;
    const resp = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id, ...request }),
      signal: options?.signal,
    });
    const text = await resp.text();
    let msg;
    if ((resp.headers.get("content-type") ?? "").includes("text/event-stream")) {
      for (const line of text.split(/\r?\n/)) {
        if (!line.startsWith("data:")) continue;
        const m = JSON.parse(line.slice(5));
        if (m.id === id) msg = m;
      }
    } else {
      msg = JSON.parse(text);
    }
    if (!msg) throw new Error(`${request.method}: no response in HTTP ${resp.status} ${text.slice(0, 300)}`);
    onMessage(request.method, msg);
    if (msg.error) return { kind: "error", error: msg.error };
    return { kind: "result", result: msg.result };
  };
}
