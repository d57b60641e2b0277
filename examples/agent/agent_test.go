package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/mcpcall/mcpcalltest"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// The unit tests run the agent in the SDK's test environment against a
// fake MCP server (its timers skipped); TestAgentExample in
// internal/testing/e2e runs the built example beside the stock server as
// its README does.

// approval is the form publish_report's approval is asked with.
var approval = json.RawMessage(`{"type":"object","properties":{"action":{"type":"string","enum":["accept","reject"]}},"required":["action"]}`)

// newEnv is a test environment of the agent whose server is fake.
func newEnv(t *testing.T, fake *mcpcalltest.Server) *workflowstest.Env {
	t.Helper()
	reg, err := Registry(fake.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	return workflowstest.New(reg)
}

// TestAgent: the agent lists the tools, calls delay (a task it follows)
// and publish_report, whose question the agent's run asks; the answer
// given there reaches publish_report, and the agent ends with both
// results, its progress naming each step.
func TestAgent(t *testing.T) {
	fake := mcpcalltest.NewServer(t)
	fake.Tool("delay", mcpcalltest.Working("waiting"), mcpcalltest.Text(`{"sleptMs":200}`))
	fake.Tool("publish_report", mcpcalltest.Ask("review", `Publish the report "Report on sales"?`, approval),
		mcpcalltest.Text("Report r-1 published at memory://r-1 (approved by tester)."))
	fake.Tool("approve_expense", mcpcalltest.Text("unused"))
	env := newEnv(t, fake)
	env.Answer("review", workflowstest.Choose("accept"))
	res, err := env.Call("agent", Input{Topic: "sales", DelayMs: 200})
	var out Output
	if err == nil {
		err = res.Output(&out)
	}
	if err != nil {
		t.Fatalf("agent: %v (result %+v)", err, res)
	}
	want := Output{Tools: []string{"approve_expense", "delay", "publish_report"}, Calls: []Called{
		{Tool: "delay", Result: `{"sleptMs":200}`},
		{Tool: "publish_report", Result: "Report r-1 published at memory://r-1 (approved by tester)."},
	}}
	if got, _ := json.Marshal(out); string(got) != string(mustJSON(t, want)) {
		t.Errorf("output %s, want %s", got, mustJSON(t, want))
	}
	if len(res.Questions) != 1 || res.Questions[0].Message != `Publish the report "Report on sales"?` {
		t.Errorf("the agent's run asked %+v, want publish_report's question", res.Questions)
	}
	tasks := fake.Tasks("publish_report")
	if len(tasks) != 1 || fake.Started("delay") != 1 {
		t.Fatalf("tasks of publish_report %v, delay started %d times; want one each", tasks, fake.Started("delay"))
	}
	if u := fake.Updates(tasks[0]); len(u) != 1 || string(u[0]["review"]) != `{"action":"accept","content":{"action":"accept"}}` {
		t.Errorf("publish_report got the answers %s, want the accept given to the agent", mustJSON(t, u))
	}
	for _, step := range []signals.Progress{{Step: "list_tools", Total: 3}, {Step: "delay", Done: 1, Total: 3}, {Step: "publish_report", Done: 2, Total: 3}} {
		if !slices.Contains(res.Progress, step) {
			t.Errorf("progress %+v lacks %+v", res.Progress, step)
		}
	}
	for _, r := range fake.Requests() {
		if r.Method == "tools/call" && r.Name == "publish_report" && !strings.Contains(string(r.Params), `"topic":"sales"`) {
			t.Errorf("publish_report called with %s, want the topic", r.Params)
		}
	}
}

// TestAgentToolMissing: a plan's tool the server does not list fails the
// agent before it calls anything.
func TestAgentToolMissing(t *testing.T) {
	fake := mcpcalltest.NewServer(t)
	fake.Tool("delay", mcpcalltest.Text("slept"))
	env := newEnv(t, fake)
	res, err := env.Call("agent", Input{Topic: "sales"})
	if err != nil || res.Status() != signals.StatusFailed || res.Snapshot.Error == nil || res.Snapshot.Error.Code != "tool_missing" {
		t.Fatalf("agent: %v, result %+v; want it failed with tool_missing", err, res)
	}
	if n := fake.Started("delay"); n != 0 {
		t.Errorf("delay started %d times, want none", n)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
