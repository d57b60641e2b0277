package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/upstream"
	"github.com/openwop/temporal-mcp/mcpcall"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// server-everything's simulate-research-query requires a task
// (2025-11-25): over stdio and over streamable HTTP its runs create the
// upstream task, follow it with tasks/get on workflow timers, relay its
// question (an elicitation/create on the stream of tasks/result) as the
// run's, and cancel it with tasks/cancel when the run is cancelled.
func TestServerEverythingTasks(t *testing.T) {
	ev := installEverything(t)
	env := testenv.Temporal(t)
	for _, tc := range []struct {
		name  string
		entry func(t *testing.T) string
	}{
		{"stdio", func(*testing.T) string {
			return fmt.Sprintf(`"command":%q,"args":[%q,"stdio"]`, ev.node, ev.main)
		}},
		{"streamable HTTP", func(t *testing.T) string { return fmt.Sprintf(`"url":%q`, ev.serveHTTP(t)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := randomPrefix()
			file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"everything",%s,"prefix":%q,
				"tools":["simulate-research-query"]}]}`, tc.entry(t), prefix), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			c := serveUpstreams(t, env, file)
			c.waitTools(prefix + "simulate-research-query")
			testResearch(t, env, c, prefix+"simulate-research-query")
		})
	}
}

// testResearch calls server-everything's simulate-research-query, served
// as tool.
func testResearch(t *testing.T, env *testenv.Env, c *mcpClient, tool string) {
	t.Run("followed", func(t *testing.T) {
		created := c.result("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"topic": "tides"}}, taskCaps)
		id, _ := created["taskId"].(string)
		done := c.waitTask(id, func(r map[string]any) bool { return r["status"] != "working" })
		if text := fmt.Sprint(done["result"]); done["status"] != "completed" || !strings.Contains(text, "Research Report: tides") {
			t.Fatalf("the run ended %v, want the upstream's report", done)
		}
		h := readHistory(t, env, id)
		if h.upstreamTask == "" || h.scheduled["MCPGetTask"] < 2 || h.timers < 2 {
			t.Fatalf("history: upstream task %q, %d tasks/get, %d timers; want the task's id and its polls on timers",
				h.upstreamTask, h.scheduled["MCPGetTask"], h.timers)
		}
	})
	t.Run("question", func(t *testing.T) {
		created := c.result("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"topic": "python", "ambiguous": true}}, taskCaps)
		id, _ := created["taskId"].(string)
		asked := c.waitTask(id, func(r map[string]any) bool { return r["status"] != "working" })
		reqs, _ := asked["inputRequests"].(map[string]any)
		if asked["status"] != "input_required" || len(reqs) != 1 {
			t.Fatalf("tasks/get = %v, want the upstream's one question", asked)
		}
		answer := map[string]any{"interpretation": "snake"}
		for key, r := range reqs {
			params, _ := r.(map[string]any)["params"].(map[string]any)
			if msg := fmt.Sprint(params["message"]); !strings.Contains(msg, `The research query "python"`) {
				t.Fatalf("the run asks %q, want the upstream's question", msg)
			}
			var fallback any
			_ = json.Unmarshal([]byte(signals.FallbackSchema), &fallback)
			content := any(answer)
			if reflect.DeepEqual(params["requestedSchema"], fallback) {
				text, _ := json.Marshal(answer)
				content = map[string]any{"value": string(text)}
			}
			c.result("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
				key: map[string]any{"action": "accept", "content": content}}}, taskCaps)
		}
		done := c.waitTask(id, func(r map[string]any) bool { return r["status"] != "working" && r["status"] != "input_required" })
		if text := fmt.Sprint(done["result"]); done["status"] != "completed" || !strings.Contains(text, "Research Report: python (snake)") {
			t.Fatalf("the run ended %v, want the report of the answered interpretation", done)
		}
		if h := readHistory(t, env, id); h.completed["MCPAwaitInput"] != 1 {
			t.Fatalf("history: %d tasks/result activities completed, want the one that relayed the question", h.completed["MCPAwaitInput"])
		}
	})
	t.Run("cancel", func(t *testing.T) {
		created := c.result("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"topic": "tides"}}, taskCaps)
		id, _ := created["taskId"].(string)
		for deadline := time.Now().Add(time.Minute); readHistory(t, env, id).upstreamTask == ""; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no upstream task within a minute")
			}
		}
		c.result("tasks/cancel", map[string]any{"taskId": id}, taskCaps)
		c.waitTask(id, func(r map[string]any) bool { return r["status"] == "cancelled" })
		// The upstream answers tasks/cancel of a task it knows that has not
		// ended; any other is an error, which would fail the activity.
		for deadline := time.Now().Add(time.Minute); readHistory(t, env, id).completed["MCPCancelTask"] != 1; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no tasks/cancel completed within a minute of the run's cancel")
			}
		}
	})
}

// history is what a run's history tells of the upstream task it follows.
type history struct {
	upstreamTask string         // the task id the tools/call answered
	scheduled    map[string]int // activities scheduled, by type
	completed    map[string]int // activities completed, by type
	timers       int
}

// readHistory reads the history of the run of taskID.
func readHistory(t *testing.T, env *testenv.Env, taskID string) history {
	t.Helper()
	id, err := runid.Parse(taskID)
	if err != nil {
		t.Fatal(err)
	}
	h := history{scheduled: map[string]int{}, completed: map[string]int{}}
	types := map[int64]string{}
	it := env.Client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			types[e.GetEventId()] = a.GetActivityType().GetName()
			h.scheduled[a.GetActivityType().GetName()]++
		}
		if e.GetTimerStartedEventAttributes() != nil {
			h.timers++
		}
		a := e.GetActivityTaskCompletedEventAttributes()
		if a == nil {
			continue
		}
		typ := types[a.GetScheduledEventId()]
		h.completed[typ]++
		if typ != "MCPCallTool" || len(a.GetResult().GetPayloads()) == 0 {
			continue
		}
		var ans mcpcall.CallAnswer
		if err := json.Unmarshal(a.GetResult().GetPayloads()[0].GetData(), &ans); err == nil && ans.Task != nil {
			h.upstreamTask = ans.Task.ID
		}
	}
	return h
}

// A run of a 2025-11-25 upstream's task tool started before the change
// that follows its tasks (no marker of "upstream-follow-legacy-tasks")
// replays the blocking activity; a new run follows the task.
func TestServerEverythingTasksVersioned(t *testing.T) {
	ev := installEverything(t)
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"everything","command":%q,"args":[%q,"stdio"],"prefix":"",
		"tools":["simulate-research-query"]}]}`, ev.node, ev.main), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set, err := upstream.Connect(ctx, file, upstream.Options{Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for _, old := range []bool{false, true} {
		reg, err := workflows.NewRegistry(set.Tools(), set.Activities())
		if err != nil {
			t.Fatal(err)
		}
		env := workflowstest.New(reg)
		if old {
			env.Temporal().OnGetVersion("upstream-follow-legacy-tasks", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			env.Temporal().OnActivity("UpstreamCallTool", mock.Anything, mock.Anything).
				Return(upstream.Result{Content: json.RawMessage(`[{"type":"text","text":"blocking"}]`)}, nil)
		}
		res, err := env.Call("simulate-research-query", map[string]any{"topic": "tides"})
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "Research Report: tides", true: "blocking"}[old]
		if got, _ := json.Marshal(res.Snapshot.Result); !strings.Contains(string(got), want) {
			t.Errorf("old=%v: result %s, want %q", old, got, want)
		}
	}
}

// A worker that stops without ending its sessions (as a killed one does)
// during a call of a 2025-11-25 HTTP upstream's task: the next worker,
// with a session of its own, follows the task in the session that made
// it (in the run's history), and the call completes.
func TestServerEverythingTaskWorkerRestart(t *testing.T) {
	ev := installEverything(t)
	env := testenv.Temporal(t)
	prefix := randomPrefix()
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"everything","url":%q,"prefix":%q,
		"tools":["simulate-research-query"]}]}`, ev.serveHTTP(t), prefix), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	queue := testenv.UniqueTaskQueue(t)
	work := func() (stop func()) {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		set, err := upstream.Connect(cctx, file, upstream.Options{Logger: env.Logger, Environ: os.Environ()})
		ccancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = set.Close() })
		reg, err := workflows.NewRegistry(set.Tools(), set.Activities())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- reg.Run(ctx, env.Client, queue, workflows.WorkerOptions{}) }()
		return func() { cancel(); <-done }
	}
	stop := work()
	c := &mcpClient{t: t, url: serveMount(t, env)}
	tool := prefix + "simulate-research-query"
	c.waitTools(tool)
	created := c.result("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"topic": "tides"}}, taskCaps)
	id, _ := created["taskId"].(string)
	for deadline := time.Now().Add(time.Minute); readHistory(t, env, id).upstreamTask == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no upstream task within a minute")
		}
	}
	stop() // its sessions are left open, not ended
	defer work()()
	done := c.waitTask(id, func(r map[string]any) bool { return r["status"] != "working" })
	if text := fmt.Sprint(done["result"]); done["status"] != "completed" || !strings.Contains(text, "Research Report: tides") {
		t.Fatalf("the run ended %v, want the upstream's report", done)
	}
}
