package activities_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/activities"
)

// heartbeats collects the details of the heartbeats a test environment
// sees, decoded as Progress.
type heartbeats struct {
	mu   sync.Mutex
	seen []activities.Progress
}

func (h *heartbeats) listen(_ *activity.Info, details converter.EncodedValues) {
	var p activities.Progress
	if details.HasValues() {
		if err := details.Get(&p); err != nil {
			p.Step = "undecodable: " + err.Error()
		}
	}
	h.mu.Lock()
	h.seen = append(h.seen, p)
	h.mu.Unlock()
}

func (h *heartbeats) all() []activities.Progress {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]activities.Progress(nil), h.seen...)
}

func TestRecordProgress(t *testing.T) {
	var h heartbeats
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.SetOnActivityHeartbeatListener(h.listen)
	want := activities.Progress{Done: 2, Total: 5, Step: "copy"}
	env.RegisterActivityWithOptions(func(ctx context.Context) error {
		activities.RecordProgress(ctx, want)
		return nil
	}, activity.RegisterOptions{Name: "Record"})
	if _, err := env.ExecuteActivity("Record"); err != nil {
		t.Fatal(err)
	}
	if got := h.all(); len(got) != 1 || got[0] != want {
		t.Fatalf("heartbeats = %+v, want one with %+v", got, want)
	}
}

func TestLastProgress(t *testing.T) {
	tests := []struct {
		name     string
		previous any // heartbeat details of the previous attempt; nil for none
		want     activities.Progress
		wantOK   bool
	}{
		{"first attempt", nil, activities.Progress{}, false},
		{"progress", activities.Progress{Done: 3, Total: 4, Step: "upload"}, activities.Progress{Done: 3, Total: 4, Step: "upload"}, true},
		{"other details", "not a progress", activities.Progress{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			if tt.previous != nil {
				env.SetHeartbeatDetails(tt.previous)
			}
			var got activities.Progress
			var ok bool
			env.RegisterActivityWithOptions(func(ctx context.Context) error {
				got, ok = activities.LastProgress(ctx)
				return nil
			}, activity.RegisterOptions{Name: "Resume"})
			if _, err := env.ExecuteActivity("Resume"); err != nil {
				t.Fatal(err)
			}
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("LastProgress = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// runInWorkflow runs the activity fn as the only activity of a workflow, with
// the heartbeat timeout given (the SDK sends heartbeats every 80% of it),
// records its heartbeats in h and returns the workflow's error.
func runInWorkflow(t *testing.T, heartbeatTimeout time.Duration, h *heartbeats, fn func(context.Context) error) error {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: "Work"})
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			HeartbeatTimeout:    heartbeatTimeout,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		return workflow.ExecuteActivity(ctx, "Work").Get(ctx, nil)
	}, workflow.RegisterOptions{Name: "Run"})
	env.SetOnActivityHeartbeatListener(h.listen)
	env.ExecuteWorkflow("Run")
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	return env.GetWorkflowError()
}

// TestRunHeartbeatsWhileWorking: Run heartbeats at once and on its
// interval while the work runs, with the details its function returns, and
// returns the work's result.
func TestRunHeartbeatsWhileWorking(t *testing.T) {
	var h heartbeats
	var done atomic.Int64
	current := func() any { return activities.Progress{Done: done.Load(), Total: 3, Step: "count"} }
	err := runInWorkflow(t, 50*time.Millisecond, &h, func(ctx context.Context) error {
		return activities.Run(ctx, 10*time.Millisecond, current, func(ctx context.Context) error {
			for range 2 {
				time.Sleep(100 * time.Millisecond)
				done.Add(1)
			}
			time.Sleep(100 * time.Millisecond)
			return errors.New("third item failed")
		})
	})
	if err == nil || !strings.Contains(err.Error(), "third item failed") {
		t.Fatalf("workflow error = %v, want the work's error", err)
	}
	got := h.all()
	if len(got) < 4 {
		t.Fatalf("%d heartbeats in 300ms with a 50ms heartbeat timeout, want at least 4: %+v", len(got), got)
	}
	if first := got[0]; first != (activities.Progress{Done: 0, Total: 3, Step: "count"}) {
		t.Errorf("first heartbeat = %+v, want done 0 of 3 before any work", first)
	}
	if last := got[len(got)-1]; last != (activities.Progress{Done: 2, Total: 3, Step: "count"}) {
		t.Errorf("last heartbeat = %+v, want done 2 of 3", last)
	}
}

// TestRunObservesCancellation: when the workflow cancels the activity, the
// next heartbeat Run sends is refused, the SDK cancels the activity's
// context, and the work returns. An activity that does not heartbeat while
// it works never learns of the cancellation.
func TestRunObservesCancellation(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	returned := make(chan error, 1)
	env.RegisterActivityWithOptions(func(ctx context.Context) error {
		err := activities.Run(ctx, 20*time.Millisecond, nil, func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(30 * time.Second):
				return errors.New("never cancelled")
			}
		})
		returned <- err
		return err
	}, activity.RegisterOptions{Name: "Wait"})
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			// The SDK sends heartbeats every 80% of this: 400ms.
			HeartbeatTimeout: 500 * time.Millisecond,
		})
		actx, cancel := workflow.WithCancel(ctx)
		f := workflow.ExecuteActivity(actx, "Wait")
		workflow.GetSignalChannel(ctx, "cancel").Receive(ctx, nil)
		cancel()
		return f.Get(ctx, nil)
	}, workflow.RegisterOptions{Name: "Cancel"})
	var once sync.Once
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) {
		once.Do(func() { env.SignalWorkflow("cancel", nil) })
	})
	env.ExecuteWorkflow("Cancel")
	if err := env.GetWorkflowError(); err == nil {
		t.Fatal("workflow completed, want it to fail with the activity's cancellation")
	}
	select {
	case err := <-returned:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
		// Benign: the SDK logs it at DEBUG level, not as an ERROR.
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || app.Category() != temporal.ApplicationErrorCategoryBenign || app.Type() != activities.CancelledErrorType {
			t.Fatalf("Run returned %#v, want a benign application error of type %s", err, activities.CancelledErrorType)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the activity never saw its cancellation")
	}
}
