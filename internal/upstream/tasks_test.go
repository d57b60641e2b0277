package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/upstream"
	"github.com/openwop/temporal-mcp/mcpcall/mcpcalltest"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// An upstream that serves Tasks (2026-07-28) is followed durably: the
// run creates the upstream task, polls it, relays its question as the
// run's question, answers it with tasks/update, and cancels it with
// tasks/cancel when the run is cancelled.
func TestTasksUpstreamFollowed(t *testing.T) {
	env := testenv.Temporal(t)
	up := mcpcalltest.NewServer(t)
	up.PollIntervalMs = 100
	schema := json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}`)
	up.Tool("research", mcpcalltest.Working("searching"), mcpcalltest.Ask("topic", "Which topic?", schema), mcpcalltest.Text("found it"))
	long := make([]mcpcalltest.Step, 10000)
	for i := range long {
		long[i] = mcpcalltest.Working("still working")
	}
	up.Tool("long", long...)
	prefix := randomPrefix()
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"tasks","url":%q,"prefix":%q}]}`, up.URL, prefix), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := serveUpstreams(t, env, file)
	c.waitTools(prefix+"research", prefix+"long")
	caps := map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{mcpmount.ExtensionTasks: map[string]any{}}}

	t.Run("question", func(t *testing.T) {
		created := c.result("tools/call", map[string]any{"name": prefix + "research", "arguments": map[string]any{}}, caps)
		id, _ := created["taskId"].(string)
		asked := c.waitTask(id, func(r map[string]any) bool { return r["status"] == "input_required" })
		for key, r := range asked["inputRequests"].(map[string]any) {
			if msg := r.(map[string]any)["params"].(map[string]any)["message"]; msg != "Which topic?" {
				t.Fatalf("the run asks %q, want the upstream's question", msg)
			}
			c.result("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
				key: map[string]any{"action": "accept", "content": map[string]any{"topic": "tides"}}}}, caps)
		}
		done := c.waitTask(id, func(r map[string]any) bool { return r["status"] == "completed" })
		if got := fmt.Sprint(done["result"]); !strings.Contains(got, "found it") {
			t.Fatalf("result %s, want the upstream's", got)
		}
		tasks := up.Tasks("research")
		if len(tasks) != 1 {
			t.Fatalf("upstream tasks %v, want one", tasks)
		}
		ups := up.Updates(tasks[0])
		if len(ups) != 1 || !strings.Contains(string(ups[0]["topic"]), `"tides"`) {
			t.Fatalf("upstream tasks/update %v, want the answer", ups)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		created := c.result("tools/call", map[string]any{"name": prefix + "long", "arguments": map[string]any{}}, caps)
		id, _ := created["taskId"].(string)
		var tasks []string
		for deadline := time.Now().Add(time.Minute); len(tasks) == 0; time.Sleep(50 * time.Millisecond) {
			if tasks = up.Tasks("long"); len(tasks) == 0 && time.Now().After(deadline) {
				t.Fatal("no upstream task within a minute")
			}
		}
		c.result("tasks/cancel", map[string]any{"taskId": id}, caps)
		c.waitTask(id, func(r map[string]any) bool { return r["status"] == "cancelled" })
		if !up.Cancelled(tasks[0]) {
			t.Fatal("the upstream task was not cancelled")
		}
	})
}

// A run of a Tasks upstream's tool started before the change that
// follows tasks (its history has no marker of "upstream-follow-tasks")
// replays the blocking activity; a new run follows the task.
func TestTasksUpstreamVersioned(t *testing.T) {
	up := mcpcalltest.NewServer(t)
	up.Tool("job", mcpcalltest.Working(""), mcpcalltest.Text("followed"))
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"tasks","url":%q,"prefix":""}]}`, up.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set, err := upstream.Connect(ctx, file, upstream.Options{})
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
			env.Temporal().OnGetVersion("upstream-follow-tasks", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			env.Temporal().OnActivity("UpstreamCallTool", mock.Anything, mock.Anything).
				Return(upstream.Result{Content: json.RawMessage(`[{"type":"text","text":"blocking"}]`)}, nil)
		}
		res, err := env.Call("job", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "followed", true: "blocking"}[old]
		if got, _ := json.Marshal(res.Snapshot.Result); !strings.Contains(string(got), want) {
			t.Errorf("old=%v: result %s, want %q", old, got, want)
		}
	}
}
