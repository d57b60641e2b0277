package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/workflows"
)

// TestIntegrationCancelledActivityLogsNoError: a normal cancellation of an
// activity that works inside activities.Run is no error. The worker's
// Temporal client logs nothing at ERROR level (the SDK logged "Activity
// error." for the context's error) and no warning about the activity (the
// SDK warned of the heartbeat that brought the cancellation), and the
// activity is still reported to the run as cancelled (its history holds
// ActivityTaskCanceled), whether the tool waits for the activity's
// cancellation or not.
func TestIntegrationCancelledActivityLogsNoError(t *testing.T) {
	for _, wait := range []bool{true, false} {
		name := map[bool]string{true: "waits for the cancellation", false: "tries to cancel"}[wait]
		t.Run(name, func(t *testing.T) { cancelQuietly(t, wait) })
	}
}

// cancelQuietly cancels a run whose activity heartbeats through
// activities.Run, on a worker whose client logs into an observer, and
// checks the activity's end and the log.
func cancelQuietly(t *testing.T, wait bool) {
	env := testenv.Temporal(t)
	core, logs := observer.New(zapcore.DebugLevel)
	c, err := client.Dial(client.Options{HostPort: env.Address, Namespace: env.Namespace,
		Logger: devtemporal.SDKLogger(zap.New(core))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	acts := &cancelActs{started: make(chan struct{}), cancelled: make(chan time.Time, 1)}
	tool := workflows.NewTool("wait_quietly", "Waits in a heartbeating activity until cancelled.",
		func(ctx workflow.Context, _ noInput) (string, error) {
			opts := workflow.GetActivityOptions(ctx)
			opts.HeartbeatTimeout = 5 * time.Second
			opts.WaitForCancellation = wait
			ctx = workflow.WithActivityOptions(ctx, opts)
			return "", workflow.ExecuteActivity(ctx, acts.Wait).Get(ctx, nil)
		})
	reg, err := workflows.NewRegistry([]workflows.Tool{tool}, acts)
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(runCtx, c, tq, workflows.WorkerOptions{}) }()
	defer func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("worker: %v", err)
		}
	}()
	s := &server{t: t, c: env.Client, tq: tq, reg: reg, env: env}
	id, run := s.start("wait_quietly", map[string]any{})
	select {
	case <-acts.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the activity did not start")
	}
	if err := env.Client.CancelWorkflow(ctx(t), id, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-acts.cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancellation never reached the activity")
	}
	_ = run.Get(ctx(t), nil) // the run ends cancelled
	s.wantActivityCancelled(id, wait)
	for _, e := range logs.FilterLevelExact(zapcore.ErrorLevel).All() {
		t.Errorf("ERROR logged for a normal cancellation: %s %v", e.Message, e.ContextMap())
	}
	for _, e := range logs.FilterLevelExact(zapcore.WarnLevel).FilterFieldKey("ActivityType").All() {
		t.Errorf("WARN logged about the activity for a normal cancellation: %s %v", e.Message, e.ContextMap())
	}
}

// wantActivityCancelled fails when the history of the closed run id
// records its activity as failed, or (when want) does not record it as
// cancelled (ActivityTaskCanceled). A run that did not wait for the
// cancellation closes before the worker reports it: its history holds
// neither.
func (s *server) wantActivityCancelled(id string, want bool) {
	s.t.Helper()
	it := s.c.GetWorkflowHistory(ctx(s.t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			return
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			s.t.Fatalf("the cancelled activity was reported as failed: %v", e.GetActivityTaskFailedEventAttributes().GetFailure())
		}
	}
	if want {
		s.t.Fatal("the history of the run records no ActivityTaskCanceled")
	}
}
