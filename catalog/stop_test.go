package catalog_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
)

// A README worker (no option set) stopped cleanly while a run's activity
// works: from the moment it is told to stop, a call of its tool is
// refused as unavailable, with no run started, while the activity in
// flight finishes its work (the worker drains); the run it left is
// handed over, as Temporal does, to the next worker of the task queue,
// where it completes.
func TestE2ECleanStopRefusesAtOnceAndDrains(t *testing.T) {
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	tool := unique("slow")
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{Namespace: env.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	url, svc := serveMount(t, env, live)
	c := &mcpClient{t: t, url: url, caps: taskCaps}
	first := startWorkerProcess(t, env, tool, tq, envDefaults+"=1", envSlow+"=1")
	eventually(t, 2*waitBound, "the tool listed", func() (bool, string) { return c.toolNames()[tool] != nil, "" })

	created := c.result("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"text": "in flight"}})
	taskID, _ := created["taskId"].(string)
	runID := runOf(t, taskID)
	eventually(t, waitBound, "the run's activity working", func() (bool, string) {
		desc, err := env.Client.DescribeWorkflowExecution(context.Background(), runID, "")
		if err != nil {
			return false, err.Error()
		}
		for _, a := range desc.GetPendingActivities() {
			if a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pending activities", len(desc.GetPendingActivities()))
	})

	before := svc.count()
	stopped := time.Now()
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var window time.Duration
	for {
		r := c.call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"text": "after the stop"}})
		if r.Error != nil && r.Error.Code == -32602 {
			window = time.Since(stopped)
			break
		}
		if time.Since(stopped) > time.Second {
			t.Fatalf("a call %s after the stop began = HTTP %d %s, want it refused as unavailable", time.Since(stopped), r.Status, r.Raw)
		}
	}
	t.Logf("clean stop: calls refused %s after SIGTERM (%d runs started in between)", window.Round(time.Millisecond), svc.count()-before)
	if window > time.Second {
		t.Fatalf("calls refused %s after the stop began, want at once", window)
	}
	select {
	case err := <-first.done:
		first.done <- err
		if err != nil {
			t.Fatalf("the stopped worker exited with %v", err)
		}
	case <-time.After(slowWork + waitBound):
		t.Fatalf("the worker did not exit within %s of SIGTERM", slowWork+waitBound)
	}
	if d := time.Since(stopped); d < slowWork/2 {
		t.Fatalf("the worker exited %s after SIGTERM: it did not wait for the activity in flight", d)
	}
	completed := false
	iter := env.Client.GetWorkflowHistory(context.Background(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		completed = completed || ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
	}
	if !completed {
		t.Fatal("the activity in flight did not complete while the worker drained")
	}

	startWorkerProcess(t, env, tool, tq, envDefaults+"=1", envSlow+"=1")
	done := c.waitTask(taskID, "completed")
	if text := toolText(t, done["result"]); text == "" {
		t.Fatalf("completed task %v has no result", done)
	}
}
