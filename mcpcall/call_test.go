package mcpcall_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/mcpcall"
	"github.com/openwop/temporal-mcp/mcpcall/mcpcalltest"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// agentIn is the input of the test agent: which tool of the fake server
// to call, and whether to answer its questions itself.
type agentIn struct {
	Tool   string `json:"tool"`
	Answer string `json:"answer,omitempty"`
}

// agentOut is what the test agent saw.
type agentOut struct {
	Text       string          `json:"text"`
	IsError    bool            `json:"isError"`
	Structured json.RawMessage `json:"structured,omitempty"`
	Statuses   []string        `json:"statuses"`
	ElapsedMs  int64           `json:"elapsedMs"`
	RPCCode    int             `json:"rpcCode,omitempty"`
	Err        string          `json:"err,omitempty"`
}

// agent calls one tool of the server "fake" and reports what it saw; an
// error of the call is reported, not returned, unless it is the run's
// cancellation.
func agent(ctx workflow.Context, in agentIn) (agentOut, error) {
	var out agentOut
	start := workflow.Now(ctx)
	opts := &mcpcall.Options{OnStatus: func(_ workflow.Context, t mcpcall.Task) {
		out.Statuses = append(out.Statuses, t.Status+":"+t.StatusMessage)
	}}
	if in.Answer != "" {
		opts.Answer = func(_ workflow.Context, q mcpcall.Question) (json.RawMessage, error) {
			return json.Marshal(map[string]any{"action": "accept", "content": map[string]string{q.Key: in.Answer}})
		}
	}
	res, err := mcpcall.CallTool(ctx, "fake", in.Tool, map[string]any{"n": 1}, opts)
	out.ElapsedMs = workflow.Now(ctx).Sub(start).Milliseconds()
	if ctx.Err() != nil {
		return out, err
	}
	if err != nil {
		out.Err = err.Error()
		var rpc *mcpcall.RPCError
		if errors.As(err, &rpc) {
			out.RPCCode = rpc.Code
		}
		return out, nil
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			out.Text += t.Text
		}
	}
	out.IsError = res.IsError
	if res.StructuredContent != nil {
		out.Structured, _ = json.Marshal(res.StructuredContent)
	}
	return out, nil
}

// newEnv returns a test kit Env whose tool "agent" calls the fake server.
func newEnv(t *testing.T, fake *mcpcalltest.Server) *workflowstest.Env {
	t.Helper()
	acts, err := mcpcall.NewActivities(map[string]mcpcall.Server{"fake": {URL: fake.URL}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("agent", "Calls a tool of the fake server.", agent, workflows.Suspends()),
	}, acts)
	if err != nil {
		t.Fatal(err)
	}
	return workflowstest.New(reg)
}

// callAgent runs the agent on tool and returns what it saw.
func callAgent(t *testing.T, env *workflowstest.Env, in agentIn) (*workflowstest.Result, agentOut) {
	t.Helper()
	res, err := env.Call("agent", in)
	if err != nil {
		t.Fatal(err)
	}
	var out agentOut
	if res.Status() == signals.StatusCompleted {
		if err := res.Output(&out); err != nil {
			t.Fatal(err)
		}
	}
	return res, out
}

// requests counts the fake's requests by method.
func requests(fake *mcpcalltest.Server) map[string]int {
	n := map[string]int{}
	for _, r := range fake.Requests() {
		n[r.Method]++
	}
	return n
}

func TestCallToolResults(t *testing.T) {
	tests := []struct {
		name    string
		steps   []mcpcalltest.Step
		want    agentOut
		methods map[string]int
	}{
		{"synchronous text", []mcpcalltest.Step{mcpcalltest.Text("hi")},
			agentOut{Text: "hi"}, map[string]int{"tools/call": 1}},
		{"synchronous error result with structured content", []mcpcalltest.Step{mcpcalltest.Result(map[string]any{
			"content": []any{map[string]any{"type": "text", "text": "no"}}, "isError": true, "structuredContent": map[string]any{"why": "x"}})},
			agentOut{Text: "no", IsError: true, Structured: json.RawMessage(`{"why":"x"}`)}, map[string]int{"tools/call": 1}},
		{"task with progress", []mcpcalltest.Step{mcpcalltest.Working("1/3"), mcpcalltest.Working("2/3"), mcpcalltest.Text("done")},
			agentOut{Text: "done", Statuses: []string{"working:1/3", "working:2/3", "completed:"}, ElapsedMs: 2000},
			map[string]int{"tools/call": 1, "tasks/get": 2}},
		{"task failing", []mcpcalltest.Step{mcpcalltest.Working(""), mcpcalltest.Fail(-32603, "boom")},
			agentOut{Statuses: []string{"working:", "failed:boom"}, ElapsedMs: 1000, RPCCode: -32603},
			map[string]int{"tools/call": 1, "tasks/get": 1}},
		{"synchronous JSON-RPC error is not retried", []mcpcalltest.Step{mcpcalltest.Fail(-32602, "bad arguments")},
			agentOut{RPCCode: -32602}, map[string]int{"tools/call": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := mcpcalltest.NewServer(t)
			fake.Tool("tool", tt.steps...)
			_, got := callAgent(t, newEnv(t, fake), agentIn{Tool: "tool"})
			if tt.want.RPCCode != 0 && got.Err == "" {
				t.Fatalf("the call did not fail: %+v", got)
			}
			got.Err = ""
			if g, w := mustJSON(t, got), mustJSON(t, tt.want); g != w {
				t.Errorf("agent saw %s, want %s", g, w)
			}
			if g, w := mustJSON(t, requests(fake)), mustJSON(t, tt.methods); g != w {
				t.Errorf("server got %s, want %s", g, w)
			}
		})
	}
}

// TestCallToolPollsAtTheServersInterval checks that the polls wait the
// task's pollIntervalMs, in workflow time.
func TestCallToolPollsAtTheServersInterval(t *testing.T) {
	fake := mcpcalltest.NewServer(t)
	fake.PollIntervalMs = 7000
	fake.Tool("tool", mcpcalltest.Working(""), mcpcalltest.Working(""), mcpcalltest.Working(""), mcpcalltest.Text("ok"))
	_, out := callAgent(t, newEnv(t, fake), agentIn{Tool: "tool"})
	if out.Text != "ok" || out.ElapsedMs != 21000 {
		t.Errorf("got %q after %d ms, want ok after 21000 ms", out.Text, out.ElapsedMs)
	}
}

// TestCallToolStretchesPolls checks that the polls of a long task
// stretch with the time it has run (at most once every thirtieth of it,
// up to a minute apart), so its history stays small.
func TestCallToolStretchesPolls(t *testing.T) {
	const polls = 200
	fake := mcpcalltest.NewServer(t)
	fake.PollIntervalMs = 1000
	steps := make([]mcpcalltest.Step, 0, polls+1)
	for range polls {
		steps = append(steps, mcpcalltest.Working(""))
	}
	fake.Tool("tool", append(steps, mcpcalltest.Text("ok"))...)
	_, out := callAgent(t, newEnv(t, fake), agentIn{Tool: "tool"})
	var want time.Duration
	for range polls {
		want += max(time.Second, min(want/30, time.Minute))
	}
	if out.Text != "ok" || out.ElapsedMs != want.Milliseconds() {
		t.Errorf("got %q after %d ms, want ok after %d ms (%d polls at 1 s would take %d ms)",
			out.Text, out.ElapsedMs, want.Milliseconds(), polls, polls*1000)
	}
}

// TestCallToolAsksTheCallersHuman checks that a question of the tool is
// asked of the calling run's human, with the inner schema, and the answer
// sent back with tasks/update.
func TestCallToolAsksTheCallersHuman(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
	tests := []struct {
		name   string
		answer workflowstest.Answer
		want   string
	}{
		{"accepted", workflowstest.Accept(map[string]string{"name": "Ada"}), `{"action":"accept","content":{"name":"Ada"}}`},
		{"declined", workflowstest.Decline(), `{"action":"decline"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := mcpcalltest.NewServer(t)
			fake.Tool("greet", mcpcalltest.Working(""), mcpcalltest.Ask("name", "Your name?", schema), mcpcalltest.Text("hello"))
			env := newEnv(t, fake)
			env.Answer("name", tt.answer)
			res, out := callAgent(t, env, agentIn{Tool: "greet"})
			if out.Text != "hello" {
				t.Fatalf("agent saw %+v", out)
			}
			q, ok := res.Question("name")
			if !ok || q.Message != "Your name?" || mustJSON(t, q.RequestedSchema) != mustJSON(t, schema) {
				t.Errorf("the run asked %+v, want the inner question", q)
			}
			ids := fake.Tasks("greet")
			if len(ids) != 1 {
				t.Fatalf("tasks %v", ids)
			}
			ups := fake.Updates(ids[0])
			if len(ups) != 1 || compact(t, ups[0]["name"]) != tt.want {
				t.Errorf("tasks/update sent %v, want name=%s", ups, tt.want)
			}
		})
	}
}

// TestCallToolAnswerer checks that an Answerer answers instead of a
// person: the run asks nothing.
func TestCallToolAnswerer(t *testing.T) {
	fake := mcpcalltest.NewServer(t)
	fake.Tool("greet", mcpcalltest.Ask("name", "Your name?", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)), mcpcalltest.Text("hello"))
	res, out := callAgent(t, newEnv(t, fake), agentIn{Tool: "greet", Answer: "Bob"})
	if out.Text != "hello" || len(res.Questions) != 0 {
		t.Fatalf("agent saw %+v, questions %+v", out, res.Questions)
	}
	ups := fake.Updates(fake.Tasks("greet")[0])
	if len(ups) != 1 || compact(t, ups[0]["name"]) != `{"action":"accept","content":{"name":"Bob"}}` {
		t.Errorf("tasks/update sent %v", ups)
	}
}

// TestCallToolCancelSendsTasksCancel checks that cancelling the calling
// run cancels the tool's task before the run ends.
func TestCallToolCancelSendsTasksCancel(t *testing.T) {
	fake := mcpcalltest.NewServer(t)
	steps := make([]mcpcalltest.Step, 100)
	for i := range steps {
		steps[i] = mcpcalltest.Working("")
	}
	fake.Tool("long", append(steps, mcpcalltest.Text("late"))...)
	env := newEnv(t, fake)
	env.At(10*time.Second+500*time.Millisecond, func() { env.Cancel("") })
	res, _ := callAgent(t, env, agentIn{Tool: "long"})
	if res.Status() != signals.StatusCancelled {
		t.Fatalf("run %s, want cancelled", res.Status())
	}
	ids := fake.Tasks("long")
	if len(ids) != 1 || !fake.Cancelled(ids[0]) {
		t.Fatalf("task %v not cancelled", ids)
	}
	if last := fake.Requests()[len(fake.Requests())-1]; last.Method != "tasks/cancel" {
		t.Errorf("last request %s, want tasks/cancel", last.Method)
	}
}

// TestCallToolRetryKeepsTheKey checks that a tools/call whose answer is
// lost is retried with the same idempotency key, so the server starts the
// work once, and that failed polls are retried.
func TestCallToolRetryKeepsTheKey(t *testing.T) {
	fake := mcpcalltest.NewServer(t)
	fake.Tool("tool", mcpcalltest.Working(""), mcpcalltest.Text("once"))
	fake.DropResponses("tools/call", 1)
	fake.FailRequests("tasks/get", 2)
	_, out := callAgent(t, newEnv(t, fake), agentIn{Tool: "tool"})
	if out.Text != "once" {
		t.Fatalf("agent saw %+v", out)
	}
	if n := fake.Started("tool"); n != 1 {
		t.Errorf("the server started the tool %d times, want once", n)
	}
	var keys []string
	for _, r := range fake.Requests() {
		if r.Method == "tools/call" {
			keys = append(keys, r.IdempotencyKey)
		}
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] || !strings.Contains(keys[0], "/") {
		t.Errorf("tools/call keys %q, want the same run-derived key twice", keys)
	}
}

// lister lists the tools of the server "fake".
func lister(ctx workflow.Context, _ struct{}) ([]string, error) {
	tools, err := mcpcall.ListTools(ctx, "fake")
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names, err
}

func TestListTools(t *testing.T) {
	fake := mcpcalltest.NewServer(t)
	fake.Tool("b", mcpcalltest.Text(""))
	fake.Tool("a", mcpcalltest.Text(""))
	acts, err := mcpcall.NewActivities(map[string]mcpcall.Server{"fake": {URL: fake.URL}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("lister", "Lists.", lister)}, acts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := workflowstest.New(reg).Call("lister", struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Result []string }
	if err := res.Output(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Join(out.Result, ",") != "a,b" {
		t.Errorf("tools %v, want a,b", out.Result)
	}
}

func TestNewActivitiesRefusesBadServers(t *testing.T) {
	for name, servers := range map[string]map[string]mcpcall.Server{
		"neither": {"s": {}},
		"both":    {"s": {URL: "http://x", Command: "x"}},
		"no name": {"": {URL: "http://x"}},
	} {
		if _, err := mcpcall.NewActivities(servers); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return compact(t, raw)
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func TestNewActivitiesRefusesAnUnknownVersion(t *testing.T) {
	if _, err := mcpcall.NewActivities(map[string]mcpcall.Server{"s": {URL: "http://x", ProtocolVersion: "2024-11-05"}}); err == nil {
		t.Error("no error for protocol version 2024-11-05")
	}
	if _, err := mcpcall.NewActivities(map[string]mcpcall.Server{"s": {URL: "http://x", ProtocolVersion: "2025-11-25"}}); err != nil {
		t.Error(err)
	}
}
