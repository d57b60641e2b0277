// The session-era TypeScript client: @modelcontextprotocol/sdk v1 (protocol
// 2025-11-25) with elicitation, progress and its experimental Tasks API (the
// 2025-11-25 task dialect). Usage: node v1.mjs <mcp url> <case>.
// It prints one JSON line {case, status, text, isError, progress, error,
// and for "structured" outputSchema, annotations}:
// the outcome as the client's own API reports it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, which] = process.argv.slice(2);
const out = { case: which, progress: 0 };
const textOf = (r) => (r?.content ?? []).map((c) => c.text ?? "").join("\n");

// The companion case is a host with neither elicitation nor tasks.
const caps = which === "companion" ? {} : { elicitation: {} };
const client = new Client({ name: "clientmatrix-sdk-v1", version: "0" }, { capabilities: caps });
if (caps.elicitation) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    out.asked = req.params.message;
    return { action: "accept", content: { action: "accept" } };
  });
}

try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  await client.listTools();
  switch (which) {
    case "approve": {
      // A blocking call: the approval arrives as elicitation/create on the
      // call's stream.
      const r = await client.callTool({ name: "publish_report", arguments: { title: "Matrix", topic: "sdk v1" } });
      out.status = "completed";
      out.isError = r.isError === true;
      out.text = textOf(r);
      break;
    }
    case "companion": {
      // What a model does in a host that follows no run by the protocol:
      // the call hands the run over, and the companion tools (whose
      // structuredContent the client checks against their outputSchema)
      // read it, answer its question and wait for its end.
      const names = (await client.listTools()).tools.map((t) => t.name);
      if (!names.includes("openwop_run_answer")) throw new Error(`no companion tools in ${names}`);
      const first = await client.callTool({ name: "publish_report", arguments: { title: "Matrix", topic: "companion" } });
      const m = /^Run (\S+) of publish_report is waiting for an answer\. Question "([^"]+)"/.exec(textOf(first));
      if (!m) throw new Error(`handoff: ${textOf(first)}`);
      const [, runId, key] = m;
      const asked = await client.callTool({ name: "openwop_run_status", arguments: { runId } });
      out.asked = asked.structuredContent.questions[0].message;
      await client.callTool({ name: "openwop_run_answer", arguments: { runId, key, content: { action: "accept" } } });
      let st;
      for (let turn = 0; turn < 20; turn++) {
        st = (await client.callTool({ name: "openwop_run_status", arguments: { runId, waitSeconds: 30 } })).structuredContent;
        if (st.status !== "working") break;
      }
      out.status = st.status;
      out.isError = st.result?.isError === true;
      out.text = textOf(st.result);
      break;
    }
    case "delay": {
      // Longer than the default 60 s request timeout: progress keeps it alive.
      const ms = Number(process.env.CLIENTMATRIX_DELAY_MS ?? 65000);
      const r = await client.callTool({ name: "delay", arguments: { delayMs: ms } }, CallToolResultSchema, {
        onprogress: () => out.progress++,
        resetTimeoutOnProgress: true,
      });
      out.status = "completed";
      out.isError = r.isError === true;
      out.text = textOf(r);
      break;
    }
    case "structured": {
      // delay declares an outputSchema: the client keeps it from
      // tools/list and validates the call's structuredContent against it
      // (callTool throws when it does not match, or is missing).
      const listed = (await client.listTools()).tools.find((t) => t.name === "delay");
      out.outputSchema = listed?.outputSchema?.type === "object";
      out.annotations = listed?.annotations ?? null;
      const r = await client.callTool({ name: "delay", arguments: { delayMs: 0 } });
      out.status = "completed";
      out.isError = r.isError === true;
      out.text = JSON.stringify(r.structuredContent ?? null);
      break;
    }
    case "badargs": {
      const r = await client.callTool({ name: "delay", arguments: { delayMs: "soon" } });
      out.status = "completed";
      out.isError = r.isError === true;
      out.text = textOf(r);
      break;
    }
    case "task-approve":
    case "task-failed":
    case "task-cancel": {
      const params = {
        "task-approve": { name: "publish_report", arguments: { title: "Matrix", topic: "sdk v1 tasks" } },
        "task-failed": { name: "failing_job", arguments: {} },
        "task-cancel": { name: "slow_compute", arguments: { seconds: 120, label: "cancel me" } },
      }[which];
      let taskId;
      const stream = client.experimental.tasks.callToolStream({ ...params, task: { ttl: 600000 } }, CallToolResultSchema);
      for await (const msg of stream) {
        if (msg.type === "taskCreated") {
          taskId = msg.task.taskId;
          if (which === "task-cancel") {
            const c = await client.experimental.tasks.cancelTask(taskId);
            out.cancelAnswer = c.status;
          }
        } else if (msg.type === "result") {
          out.isError = msg.result.isError === true;
          out.text = textOf(msg.result);
        } else if (msg.type === "error") {
          out.streamError = msg.error.message;
        }
      }
      if (!taskId) throw new Error("no task was created");
      out.status = (await client.experimental.tasks.getTask(taskId)).status;
      if (which === "task-failed") {
        // tasks/result of a failed task is the tool's own result.
        const r = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
        out.isError = r.isError === true;
        out.text = textOf(r);
      }
      break;
    }
    default:
      throw new Error(`unknown case ${which}`);
  }
} catch (e) {
  out.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(out));
