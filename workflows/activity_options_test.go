package workflows_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap/zaptest"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// The default activity options run an activity as often as its author
// expects: once, unless it fails or its worker dies, whatever its length and
// whether it heartbeats or not.

func TestDefaultActivityOptions(t *testing.T) {
	o := workflows.DefaultActivityOptions()
	if o.HeartbeatTimeout != 0 {
		t.Errorf("HeartbeatTimeout = %v: an activity that does not heartbeat would time out and run again", o.HeartbeatTimeout)
	}
	if o.StartToCloseTimeout <= 0 || !o.WaitForCancellation {
		t.Errorf("StartToCloseTimeout %v, WaitForCancellation %v", o.StartToCloseTimeout, o.WaitForCancellation)
	}
	if p := o.RetryPolicy; p == nil || p.MaximumAttempts != 5 || p.InitialInterval != time.Second || p.BackoffCoefficient != 2 || p.MaximumInterval != 30*time.Second {
		t.Errorf("RetryPolicy = %+v, want the documented one", p)
	}
}

// plainActivities is an activity that works 5 s without heartbeating and
// counts its executions.
type plainActivities struct {
	executions atomic.Int32
}

// Work runs for 5 s without heartbeating.
func (a *plainActivities) Work(ctx context.Context) (int32, error) {
	n := a.executions.Add(1)
	select {
	case <-time.After(5 * time.Second):
		return n, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func TestIntegrationPlainActivityRunsOnce(t *testing.T) {
	acts := &plainActivities{}
	tool := workflows.NewTool("plain_activity", "Runs a 5 s activity that does not heartbeat.",
		func(ctx workflow.Context, _ noInput) (int32, error) {
			var n int32
			err := workflow.ExecuteActivity(ctx, acts.Work).Get(ctx, &n)
			return n, err
		})
	reg, err := workflows.NewRegistry([]workflows.Tool{tool}, acts)
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	env.NewWorker(t, tq, reg.Register)
	s := &server{t: t, c: env.Client, tq: tq, reg: reg, env: env}

	id, run := s.start("plain_activity", map[string]any{})
	wait, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var rec signals.RunRecord
	err = run.Get(wait, &rec)
	if n := acts.executions.Load(); n != 1 {
		t.Errorf("the activity ran %d times, want once", n)
	}
	if err != nil {
		t.Fatalf("run error = %v, want completed", err)
	}
	if rec.Snapshot.Status != signals.StatusCompleted || string(rec.Snapshot.Outputs) != `{"result":1}` {
		t.Errorf("final snapshot %+v", rec.Snapshot)
	}
	if a := activityAttempts(s, id); !slices.Equal(a, []int32{1}) {
		t.Errorf("activity attempts in the history = %v, want [1]", a)
	}
	s.replay(id)
}

func TestIntegrationHeartbeatingActivityCancelledWithinSeconds(t *testing.T) {
	// Activities heartbeating every 500 ms, as the stock worker's do.
	acts := tools.NewActivities(zaptest.NewLogger(t), tools.ActivityOptions{HeartbeatInterval: 500 * time.Millisecond})
	reg, err := tools.DefaultRegistry(acts)
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	env.NewWorker(t, tq, reg.Register)
	s := &server{t: t, c: env.Client, tq: tq, acts: acts, reg: reg, env: env}

	id, run := s.start("delay", map[string]any{"delayMs": 120000})
	awaitActivityStarted(s, id)
	// Past the first heartbeat, which the SDK sends at once: later ones are
	// batched, and the cancellation rides on the next one that is sent.
	time.Sleep(3 * time.Second)

	begin := time.Now()
	if err := s.c.CancelWorkflow(ctx(t), id, ""); err != nil {
		t.Fatal(err)
	}
	const bound = 10 * time.Second
	for !slices.Contains(acts.Cancelled(id), "Sleep") {
		if time.Since(begin) > bound {
			t.Fatalf("the Sleep activity did not see the cancellation within %v", bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
	seen := time.Since(begin)
	t.Logf("the activity saw the cancellation after %v", seen.Round(time.Millisecond))

	wait, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	err = run.Get(wait, nil)
	var canceled *temporal.CanceledError
	if !errors.As(err, &canceled) {
		t.Fatalf("run error = %v, want canceled", err)
	}
	typ, closed := s.closeRecord(id)
	if typ != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED || closed.Snapshot.Status != signals.StatusCancelled {
		t.Errorf("close event %s, snapshot %+v", typ, closed.Snapshot)
	}
	if a := activityAttempts(s, id); !slices.Equal(a, []int32{1}) {
		t.Errorf("activity attempts in the history = %v, want [1]", a)
	}
	s.replay(id)
}

// awaitActivityStarted waits until the run's activity runs (10 s at most).
func awaitActivityStarted(s *server, id string) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := s.c.DescribeWorkflowExecution(ctx(s.t), id, "")
		if err != nil {
			s.t.Fatal(err)
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s: no activity started", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// activityAttempts lists the attempt of every ActivityTaskStarted event of
// the run (the history records the last attempt of each activity).
func activityAttempts(s *server, id string) []int32 {
	s.t.Helper()
	var out []int32
	it := s.c.GetWorkflowHistory(ctx(s.t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			out = append(out, a.GetAttempt())
		}
	}
	return out
}
