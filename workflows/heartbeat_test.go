package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/workflows"
)

// cancelActs is an activity that heartbeats through activities.Run until
// it is cancelled, and reports when it started and when it saw the
// cancellation.
type cancelActs struct {
	started   chan struct{}
	cancelled chan time.Time
}

// Wait heartbeats until its context is done.
func (a *cancelActs) Wait(ctx context.Context) error {
	close(a.started)
	return activities.Run(ctx, 0, nil, func(ctx context.Context) error {
		<-ctx.Done()
		a.cancelled <- time.Now()
		return ctx.Err()
	})
}

// TestIntegrationCancelReachesHeartbeatingActivity: on a worker of
// Registry.Run with no option set, a cancellation reaches an activity
// that heartbeats through activities.Run within about its heartbeat
// interval (1 s) although its HeartbeatTimeout is 5 s: the SDK alone would
// send its heartbeats only every 4 s (80% of the timeout), and the
// cancellation would wait for the next one.
func TestIntegrationCancelReachesHeartbeatingActivity(t *testing.T) {
	acts := &cancelActs{started: make(chan struct{}), cancelled: make(chan time.Time, 1)}
	tool := workflows.NewTool("wait_heartbeating", "Waits in a heartbeating activity until cancelled.",
		func(ctx workflow.Context, _ noInput) (string, error) {
			opts := workflow.GetActivityOptions(ctx)
			opts.HeartbeatTimeout = 5 * time.Second
			ctx = workflow.WithActivityOptions(ctx, opts)
			return "", workflow.ExecuteActivity(ctx, acts.Wait).Get(ctx, nil)
		})
	reg, err := workflows.NewRegistry([]workflows.Tool{tool}, acts)
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(runCtx, env.Client, tq, workflows.WorkerOptions{}) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("worker: %v", err)
		}
	})
	s := &server{t: t, c: env.Client, tq: tq, reg: reg, env: env}
	id, _ := s.start("wait_heartbeating", map[string]any{})
	select {
	case <-acts.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the activity did not start")
	}
	// The first heartbeat goes out at once; the next ones are throttled.
	time.Sleep(500 * time.Millisecond)
	asked := time.Now()
	if err := env.Client.CancelWorkflow(ctx(t), id, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case seen := <-acts.cancelled:
		// Bound with margin: about 1 s with the worker's defaults, about
		// 3.5 s without them.
		if took := seen.Sub(asked); took > 2500*time.Millisecond {
			t.Fatalf("the cancellation reached the activity after %s, want within about its 1 s heartbeat interval", took)
		} else {
			t.Logf("the cancellation reached the activity after %s", took)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancellation never reached the activity")
	}
}
