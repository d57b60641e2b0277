package mcpmount

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/mcpcall"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/workflows"
)

// calleeIn is the input of the callee tool: which tool of this mount to
// call, with what.
type calleeIn struct {
	Server string         `json:"server,omitempty"`
	Tool   string         `json:"tool"`
	Args   map[string]any `json:"args"`
}

// callee is an agent workflow that calls one tool of this same mount with
// package mcpcall and returns its text: the run's questions are the inner
// tool's.
func callee(ctx workflow.Context, in calleeIn) (string, error) {
	server := in.Server
	if server == "" {
		server = "self"
	}
	res, err := mcpcall.CallTool(ctx, server, in.Tool, in.Args, nil)
	if err != nil {
		return "", err
	}
	var out []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			out = append(out, t.Text)
		}
	}
	return strings.Join(out, ""), nil
}

// callingTools are the conformance tools and "call_tool", an agent that
// calls them with package mcpcall.
func callingTools() []workflows.Tool {
	return append(conformancetools.Tools(),
		workflows.NewTool("call_tool", "Calls a tool of this server.", callee, workflows.Suspends()))
}

// callingRegistry is the registry of callingTools whose mcpcall
// activities reach the mount at url with key ka (tenant acme): as
// "self", and as "self-2025" in 2025-11-25.
func callingRegistry(url string) (*workflows.Registry, error) {
	auth := http.Header{"Authorization": {"Bearer ka"}}
	calls, err := mcpcall.NewActivities(map[string]mcpcall.Server{"self": {URL: url, Header: auth},
		"self-2025": {URL: url, Header: auth, ProtocolVersion: "2025-11-25"}})
	if err != nil {
		return nil, err
	}
	acts := tools.NewActivities(testenv.Logger(), tools.ActivityOptions{HeartbeatInterval: 200 * time.Millisecond})
	return workflows.NewRegistry(callingTools(), acts, calls)
}

// newCallingStack is a stack whose worker serves callingTools through
// the stack's own MCP endpoint. With agentQueue set, call_tool's runs
// start on that task queue, which no worker of the stack polls.
func newCallingStack(t *testing.T, agentQueue string) *stack {
	t.Helper()
	keys := keysFor(t, "ka=acme:alice")
	var tq string
	s := newStackWith(t, keys, "", func(o *Options) func(*Mount) {
		env := testenv.Temporal(t)
		tq = testenv.UniqueTaskQueue(t)
		o.Runs = runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
		specs, err := workflows.NewRegistry(callingTools())
		if err != nil {
			t.Fatal(err)
		}
		list := specs.Specs()
		for i := range list {
			if list[i].Name == "call_tool" {
				list[i].TaskQueue = agentQueue
			}
		}
		o.Catalog = staticCatalog(t, list...)
		return nil
	})
	reg, err := callingRegistry(s.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	s.env.NewWorker(t, tq, reg.Register)
	return s
}

// TestIntegrationMCPCallLongTool: an agent run calls a long tool of this
// server; the inner call is a task the agent follows, and its result is
// the agent's.
func TestIntegrationMCPCallLongTool(t *testing.T) {
	for _, server := range []string{"self", "self-2025"} {
		t.Run(server, func(t *testing.T) { testLongTool(t, server) })
	}
}

// testLongTool is TestIntegrationMCPCallLongTool with the inner server
// named server.
func testLongTool(t *testing.T, server string) {
	s := newCallingStack(t, "")
	c := s.client(t, "ka", tasksCaps())
	task := callTool(t, c, "call_tool", map[string]any{"server": server, "tool": "slow_compute", "args": map[string]any{"seconds": 2, "label": "inner"}})
	if task["resultType"] != "task" {
		t.Fatalf("call_tool answered %v, want a task", task)
	}
	done := waitTask(t, c, task["taskId"].(string), status("completed"))
	if got := text(t, done["result"]); got != `Computed "inner" in 2 second(s).` {
		t.Errorf("agent's result %q, want slow_compute's", got)
	}
	inner := innerCall(t, s, task["taskId"].(string))
	if inner.Task == nil || !strings.Contains(inner.Key, "/") {
		t.Fatalf("the inner call answered %+v, want a task and a run-derived key", inner)
	}
	if want := map[string]string{"self": "", "self-2025": "2025-11-25"}[server]; inner.Task.Dialect != want {
		t.Errorf("inner task followed in %q, want %q", inner.Task.Dialect, want)
	}
	if st := wantResult(t, c.call("tasks/get", map[string]any{"taskId": inner.Task.ID}, nil)); st["status"] != "completed" {
		t.Errorf("inner task %v", st)
	}
	summaries := activitySummaries(t, s, task["taskId"].(string))
	for _, want := range []string{"tools/call slow_compute on " + server, "tasks/get: slow_compute on " + server} {
		if !slices.Contains(summaries, want) {
			t.Errorf("the agent's activities show %q in the Temporal UI, want %q among them", summaries, want)
		}
	}
}

// activitySummaries are the summaries (what the Temporal UI shows) of the
// activities the run of task id scheduled.
func activitySummaries(t *testing.T, s *stack, id string) []string {
	t.Helper()
	var out []string
	it := s.env.Client.GetWorkflowHistory(t.Context(), runOf(t, id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetActivityTaskScheduledEventAttributes() == nil || ev.GetUserMetadata().GetSummary() == nil {
			continue
		}
		var summary string
		if err := converter.GetDefaultDataConverter().FromPayload(ev.GetUserMetadata().GetSummary(), &summary); err != nil {
			t.Fatal(err)
		}
		out = append(out, summary)
	}
	return out
}

// TestIntegrationMCPCallQuestionThroughOuterRun: the inner tool's
// question is asked by the agent's run, a client answers it there, and
// the answer reaches the inner tool.
func TestIntegrationMCPCallQuestionThroughOuterRun(t *testing.T) {
	s := newCallingStack(t, "")
	c := s.client(t, "ka", tasksCaps())
	task := callTool(t, c, "call_tool", map[string]any{"tool": "confirm_delete", "args": map[string]any{"filename": "a.txt"}})
	id := task["taskId"].(string)
	asked := waitTask(t, c, id, status("input_required"))
	reqs := asked["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("inputRequests %v, want the inner question", reqs)
	}
	for key, r := range reqs {
		params := r.(map[string]any)["params"].(map[string]any)
		if msg := params["message"]; msg != "Delete a.txt?" {
			t.Errorf("outer question %q, want the inner one", msg)
		}
		if schema, _ := json.Marshal(params["requestedSchema"]); !strings.Contains(string(schema), `"confirm"`) {
			t.Errorf("outer schema %s, want the inner one", schema)
		}
		wantResult(t, c.call("tasks/update", map[string]any{"taskId": id,
			"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, nil))
	}
	done := waitTask(t, c, id, status("completed"))
	if got := text(t, done["result"]); got != "Deleted a.txt." {
		t.Errorf("agent's result %q, want the inner tool's after the answer", got)
	}
}

// TestIntegrationMCPCallCancel: cancelling the agent's run cancels the
// inner task: the inner run has its cancellation within 2 s, and ends
// cancelled.
func TestIntegrationMCPCallCancel(t *testing.T) {
	for _, server := range []string{"self", "self-2025"} {
		t.Run(server, func(t *testing.T) { testCancel(t, server) })
	}
}

// testCancel is TestIntegrationMCPCallCancel with the inner server named
// server.
func testCancel(t *testing.T, server string) {
	s := newCallingStack(t, "")
	c := s.client(t, "ka", tasksCaps())
	task := callTool(t, c, "call_tool", map[string]any{"server": server, "tool": "slow_compute", "args": map[string]any{"seconds": 600}})
	id := task["taskId"].(string)
	inner := innerCall(t, s, id)
	if inner.Task == nil {
		t.Fatalf("the inner call answered %+v, want a task", inner)
	}
	start := time.Now()
	wantResult(t, c.call("tasks/cancel", map[string]any{"taskId": id}, nil))
	deadline := start.Add(2 * time.Second)
	for {
		st := wantResult(t, c.call("tasks/get", map[string]any{"taskId": inner.Task.ID}, nil))
		msg, _ := st["statusMessage"].(string)
		if st["status"] == "cancelled" || strings.HasPrefix(msg, "cancellation requested") {
			t.Logf("inner task %s %v after the outer cancel", st["status"], time.Since(start))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("inner task %v 2 s after the outer cancel, want cancelled", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitTask(t, c, inner.Task.ID, status("cancelled"))
	waitTask(t, c, id, status("cancelled"))
}

// innerCall waits for the agent run of task id to have made its
// tools/call and returns what it answered, read from the run's history.
func innerCall(t *testing.T, s *stack, id string) mcpcall.CallAnswer {
	t.Helper()
	run := runOf(t, id)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		it := s.env.Client.GetWorkflowHistory(t.Context(), run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
				var ans mcpcall.CallAnswer
				if converter.GetDefaultDataConverter().FromPayloads(a.GetResult(), &ans) == nil && ans.Key != "" {
					return ans
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("run %s made no tools/call", run)
	return mcpcall.CallAnswer{}
}

// TestIntegrationMCPCallRetryAnswersTheSameRun: a tools/call activity
// retried with its idempotency key (as after a lost answer or a killed
// worker) gets the task of the run the first attempt started, so the
// tool runs once.
func TestIntegrationMCPCallRetryAnswersTheSameRun(t *testing.T) {
	s := newCallingStack(t, "")
	calls, err := mcpcall.NewActivities(map[string]mcpcall.Server{"self": {URL: s.URL + "/mcp",
		Header: http.Header{"Authorization": {"Bearer ka"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	req := mcpcall.CallRequest{Server: "self", Tool: "slow_compute", Key: "run-1/5",
		Arguments: json.RawMessage(`{"seconds":1,"label":"once"}`)}
	var ids []string
	for range 2 {
		env := suite.NewTestActivityEnvironment()
		calls.Register(env)
		v, err := env.ExecuteActivity(calls.MCPCallTool, req)
		if err != nil {
			t.Fatal(err)
		}
		var ans mcpcall.CallAnswer
		if err := v.Get(&ans); err != nil || ans.Task == nil {
			t.Fatalf("answer %+v, %v: want a task", ans, err)
		}
		ids = append(ids, ans.Task.ID)
	}
	if ids[0] != ids[1] {
		t.Errorf("the retry got task %s, the first attempt %s: want the same run", ids[1], ids[0])
	}
}

// TestIntegrationMCPCallPreRunQuestion: a tool that asks before its run
// starts (an input_required answer to tools/call) has its question asked
// by the agent's run; the answer goes back with the call's retry.
func TestIntegrationMCPCallPreRunQuestion(t *testing.T) {
	s := newCallingStack(t, "")
	c := s.client(t, "ka", tasksCaps())
	task := callTool(t, c, "call_tool", map[string]any{"tool": "test_tool_with_task", "args": map[string]any{}})
	id := task["taskId"].(string)
	asked := waitTask(t, c, id, status("input_required"))
	for key, r := range asked["inputRequests"].(map[string]any) {
		if msg := r.(map[string]any)["params"].(map[string]any)["message"]; msg != "What is your name?" {
			t.Errorf("outer question %q, want the inner pre-run one", msg)
		}
		wantResult(t, c.call("tasks/update", map[string]any{"taskId": id,
			"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}}, nil))
	}
	done := waitTask(t, c, id, status("completed"))
	if got := text(t, done["result"]); !strings.Contains(got, "Ada") {
		t.Errorf("agent's result %q, want a greeting of Ada", got)
	}
}
