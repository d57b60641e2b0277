package upstream_test

// An upstream's elicitation is the run's question: a go-sdk server of the
// test's own whose tool elicits, behind a worker of the real embedded
// Temporal server, its question answered by an MCP client over HTTP.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/upstream"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/workflows"
)

// asker is an upstream whose tool ask elicits a name and answers with
// the elicitation's result; each result (or error) is sent on results.
type asker struct {
	results chan string
}

var askSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"name": map[string]any{"type": "string", "minLength": 2}},
	"required":   []any{"name"},
}

func (a *asker) serve(t *testing.T) string {
	t.Helper()
	a.results = make(chan string, 8)
	// A question left open when the test ends (it failed) ends with it, so
	// that the server can close.
	ended, end := context.WithCancel(context.Background())
	elicit := func(ctx context.Context, ss *mcp.ServerSession) (*mcp.ElicitResult, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer context.AfterFunc(ended, cancel)()
		defer cancel()
		return ss.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?", RequestedSchema: askSchema})
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks a name."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := elicit(ctx, req.Session)
			if err != nil {
				a.results <- "error: " + err.Error()
				return nil, nil, err
			}
			content, _ := json.Marshal(res.Content)
			text := res.Action + " " + string(content)
			a.results <- text
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "askro", Description: "Asks a name; read-only.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := elicit(ctx, req.Session)
			if err != nil {
				a.results <- "error: " + err.Error()
				return nil, nil, err
			}
			content, _ := json.Marshal(res.Content)
			a.results <- res.Action + " " + string(content)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + string(content)}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(end)
	return srv.URL
}

// next is the next result the upstream's tool got (a minute at most).
func (a *asker) next(t *testing.T) string {
	t.Helper()
	select {
	case r := <-a.results:
		return r
	case <-time.After(time.Minute):
		t.Fatal("the upstream's elicitation got no result within a minute")
		return ""
	}
}

// asking is the fixture of TestElicitationIsTheRunsQuestion: the asker
// behind a worker, and an MCP client of the mount.
type asking struct {
	env   *testenv.Env
	file  upstream.File
	c     *mcpClient
	a     *asker
	ask   string   // the served name of the asker's tool ask
	askro string   // and of askro
	tasks []string // the tasks of the runs, to replay
}

func newAsking(t *testing.T) *asking {
	f := &asking{env: testenv.Temporal(t), a: &asker{}}
	prefix := randomPrefix()
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"asker","url":%q,"prefix":%q,"policy":{"askro":{"timeout":"3s","heartbeat":"1s"}}}]}`, f.a.serve(t), prefix), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	f.file, f.ask, f.askro = file, prefix+"ask", prefix+"askro"
	f.c = serveUpstreams(t, f.env, file)
	f.c.waitTools(f.ask, f.askro)
	return f
}

// question starts a call of tool as a task and returns its task and its
// one question's key, once the run asks it.
func (f *asking) question(t *testing.T, tool string) (taskID, key string) {
	t.Helper()
	created := f.c.result("tools/call", map[string]any{"name": tool, "arguments": map[string]any{}}, taskCaps)
	taskID, _ = created["taskId"].(string)
	f.tasks = append(f.tasks, taskID)
	res := f.c.waitTask(taskID, func(r map[string]any) bool { return r["status"] != "working" })
	reqs, _ := res["inputRequests"].(map[string]any)
	if res["status"] != "input_required" || len(reqs) != 1 {
		t.Fatalf("tasks/get = %v, want the upstream's one question", res)
	}
	for k, r := range reqs {
		key = k
		params, _ := r.(map[string]any)["params"].(map[string]any)
		got, _ := json.Marshal(params["requestedSchema"])
		want, _ := json.Marshal(askSchema)
		if params["message"] != "Your name?" || string(got) != string(want) {
			t.Fatalf("question = %v, want the upstream's message and schema %s", params, want)
		}
	}
	return taskID, key
}

// answer answers the question key of the task with tasks/update.
func (f *asking) answer(taskID, key string, resp map[string]any) (*rpcError, []byte) {
	_, rpcErr, raw := f.c.call("tasks/update", map[string]any{"taskId": taskID, "inputResponses": map[string]any{key: resp}}, taskCaps)
	return rpcErr, raw
}

// resultText is the result of the task once it completed.
func (f *asking) resultText(taskID string) string {
	res := f.c.waitTask(taskID, func(r map[string]any) bool { return r["status"] == "completed" })
	return fmt.Sprint(res["result"])
}

// TestElicitationIsTheRunsQuestion: the upstream's elicitation is asked as
// the run's question, answered by every kind of client, its answer relayed
// back within the upstream's request.
func TestElicitationIsTheRunsQuestion(t *testing.T) {
	f := newAsking(t)
	c, a, ask, question, answer, resultText := f.c, f.a, f.ask, f.question, f.answer, f.resultText

	t.Run("accept", func(t *testing.T) {
		taskID, key := question(t, ask)
		// A misfit answer is refused, and the question stays open.
		if rpcErr, raw := answer(taskID, key, map[string]any{"action": "accept", "content": map[string]any{"name": "A"}}); rpcErr == nil || rpcErr.Code != -32602 {
			t.Fatalf("tasks/update with a name too short: %s, want -32602", raw)
		}
		if r := c.result("tasks/get", map[string]any{"taskId": taskID}, taskCaps); r["status"] != "input_required" || r["inputRequests"].(map[string]any)[key] == nil {
			t.Fatalf("after the refused answer tasks/get = %v, want the question still open", r)
		}
		if rpcErr, raw := answer(taskID, key, map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}); rpcErr != nil {
			t.Fatalf("tasks/update: %s", raw)
		}
		if got, want := a.next(t), `accept {"name":"Ada"}`; got != want {
			t.Fatalf("the upstream's elicitation got %q, want %q", got, want)
		}
		if text := resultText(taskID); !strings.Contains(text, `accept {"name":"Ada"}`) {
			t.Fatalf("the run's result = %s, want the tool's answer with the content", text)
		}
	})
	t.Run("decline", func(t *testing.T) {
		taskID, key := question(t, ask)
		if rpcErr, raw := answer(taskID, key, map[string]any{"action": "decline"}); rpcErr != nil {
			t.Fatalf("tasks/update: %s", raw)
		}
		if got := a.next(t); !strings.HasPrefix(got, "decline") {
			t.Fatalf("the upstream's elicitation got %q, want decline", got)
		}
		if text := resultText(taskID); !strings.Contains(text, "decline") {
			t.Fatalf("the run's result = %s, want the tool's answer to the decline", text)
		}
	})
	// Two calls ask at once: over streamable HTTP each elicitation comes
	// on its call's response stream, so each is its own run's question.
	t.Run("concurrent", func(t *testing.T) {
		first, firstKey := question(t, ask)
		second, secondKey := question(t, ask)
		for _, q := range []struct{ task, key, name string }{{second, secondKey, "Second"}, {first, firstKey, "First"}} {
			if rpcErr, raw := answer(q.task, q.key, map[string]any{"action": "accept", "content": map[string]any{"name": q.name}}); rpcErr != nil {
				t.Fatalf("tasks/update: %s", raw)
			}
			want := fmt.Sprintf(`accept {"name":%q}`, q.name)
			if got := a.next(t); got != want {
				t.Fatalf("the upstream's elicitation got %q, want %q", got, want)
			}
			if text := resultText(q.task); !strings.Contains(text, want) {
				t.Fatalf("the run's result = %s, want %s", text, want)
			}
		}
	})
	// Cancelling the run while it asks ends the upstream's request: the
	// elicitation is answered cancel, or the call is cancelled first.
	t.Run("cancel", func(t *testing.T) {
		taskID, _ := question(t, ask)
		c.result("tasks/cancel", map[string]any{"taskId": taskID}, taskCaps)
		if got := a.next(t); !strings.HasPrefix(got, "cancel") && !strings.Contains(got, "context canceled") {
			t.Fatalf("the upstream's elicitation got %q, want cancel", got)
		}
		c.waitTask(taskID, func(r map[string]any) bool { return r["status"] == "cancelled" })
	})
	t.Run("retried attempt", f.retriedAttempt)
	t.Run("companion", f.companion)
	t.Run("blocking", f.blocking)
	t.Run("replay", f.replay)
}

// An attempt that ends while its question is open (askro is read-only,
// and its attempts time out after 3 s): the next attempt's question
// replaces it, and its answer completes the run.
func (f *asking) retriedAttempt(t *testing.T) {
	c, a, question, answer, resultText := f.c, f.a, f.question, f.answer, f.resultText
	taskID, first := question(t, f.askro)
	res := c.waitTask(taskID, func(r map[string]any) bool {
		reqs, _ := r["inputRequests"].(map[string]any)
		return len(reqs) == 1 && reqs[first] == nil
	})
	var key string
	for k := range res["inputRequests"].(map[string]any) {
		key = k
	}
	if got := a.next(t); !strings.HasPrefix(got, "error") && !strings.HasPrefix(got, "cancel") {
		t.Fatalf("the first attempt's elicitation got %q, want it ended", got)
	}
	if rpcErr, raw := answer(taskID, key, map[string]any{"action": "accept", "content": map[string]any{"name": "Bo"}}); rpcErr != nil {
		t.Fatalf("tasks/update: %s", raw)
	}
	if got, want := a.next(t), `accept {"name":"Bo"}`; got != want {
		t.Fatalf("the second attempt's elicitation got %q, want %q", got, want)
	}
	if text := resultText(taskID); !strings.Contains(text, `accept {"name":"Bo"}`) {
		t.Fatalf("the run's result = %s", text)
	}
}

// A client with neither Tasks nor elicitation: its call is handed over
// to the companion tools when the upstream asks, and its answer
// reaches the upstream.
func (f *asking) companion(t *testing.T) {
	c, a, ask := f.c, f.a, f.ask
	handoff := c.result("tools/call", map[string]any{"name": ask, "arguments": map[string]any{}}, nil)
	st, _ := handoff["structuredContent"].(map[string]any)
	qs, _ := st["questions"].([]any)
	if st["status"] != "input_required" || len(qs) != 1 {
		t.Fatalf("tools/call %s without Tasks or elicitation = %v, want the handoff with the upstream's question", ask, handoff)
	}
	q := qs[0].(map[string]any)
	if q["message"] != "Your name?" {
		t.Fatalf("question = %v, want the upstream's message", q)
	}
	c.result("tools/call", map[string]any{"name": "openwop_run_answer", "arguments": map[string]any{
		"runId": st["runId"], "key": q["key"], "content": map[string]any{"name": "Cy"}}}, nil)
	if got, want := a.next(t), `accept {"name":"Cy"}`; got != want {
		t.Fatalf("the upstream's elicitation got %q, want %q", got, want)
	}
	done := c.result("tools/call", map[string]any{"name": "openwop_run_status", "arguments": map[string]any{"runId": st["runId"], "waitSeconds": 30}}, nil)
	if st, _ := done["structuredContent"].(map[string]any); st["status"] != "completed" || !strings.Contains(fmt.Sprint(st["result"]), `accept {"name":"Cy"}`) {
		t.Fatalf("openwop_run_status = %v, want the run completed with the tool's answer", done)
	}
}

// A blocking 2026-07-28 client that declares elicitation: the call
// answers input_required with the upstream's question, and the retry
// that carries the answer completes.
func (f *asking) blocking(t *testing.T) {
	c, a, ask := f.c, f.a, f.ask
	caps := map[string]any{"elicitation": map[string]any{}}
	first := c.result("tools/call", map[string]any{"name": ask, "arguments": map[string]any{}}, caps)
	reqs, _ := first["inputRequests"].(map[string]any)
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || len(reqs) != 1 || state == "" {
		t.Fatalf("tools/call %s = %v, want input_required with the upstream's question", ask, first)
	}
	var key string
	for k, r := range reqs {
		key = k
		if m := r.(map[string]any)["params"].(map[string]any)["message"]; m != "Your name?" {
			t.Fatalf("question message = %v, want the upstream's", m)
		}
	}
	res := c.result("tools/call", map[string]any{"name": ask, "arguments": map[string]any{}, "requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Di"}}}}, caps)
	if got, want := a.next(t), `accept {"name":"Di"}`; got != want {
		t.Fatalf("the upstream's elicitation got %q, want %q", got, want)
	}
	if res["resultType"] != "complete" || !strings.Contains(fmt.Sprint(res["content"]), `accept {"name":"Di"}`) {
		t.Fatalf("the retry = %v, want the tool's answer", res)
	}
}

// The runs' histories, with their updates, replay with the tools'
// code: what the update handler and the questions do is deterministic.
func (f *asking) replay(t *testing.T) {
	set, err := upstream.Connect(context.Background(), f.file, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	reg, err := workflows.NewRegistry(set.Tools(), set.Activities())
	if err != nil {
		t.Fatal(err)
	}
	updates := 0
	for _, taskID := range f.tasks {
		id, err := runid.Unproject(taskID)
		if err != nil {
			t.Fatal(err)
		}
		hist := &historypb.History{}
		for it := f.env.Client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT); it.HasNext(); {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			hist.Events = append(hist.Events, e)
			if e.GetWorkflowExecutionUpdateCompletedEventAttributes() != nil {
				updates++
			}
		}
		rp := worker.NewWorkflowReplayer()
		reg.RegisterWorkflows(rp)
		exec := workflow.Execution{ID: id, RunID: hist.Events[0].GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId()}
		if err := rp.ReplayWorkflowHistoryWithOptions(nil, hist, worker.ReplayWorkflowHistoryOptions{OriginalExecution: exec}); err != nil {
			t.Errorf("replay of run %s: %v", id, err)
		}
	}
	if updates < len(f.tasks) {
		t.Fatalf("the histories hold %d completed updates, want one at least per run (%d)", updates, len(f.tasks))
	}
}
