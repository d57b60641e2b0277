package workflowstest

import (
	"context"
	"fmt"
	"slices"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/signals"
)

// activitySignals is the worker interceptor of an Env's environment: every
// activity signals the run under test as the server would, so that an
// activity that reports its progress (activities.ReportProgress) runs in
// the SDK's test environment, whose own client has no server behind it.
type activitySignals struct {
	interceptor.WorkerInterceptorBase
	e *Env
}

// InterceptActivity implements interceptor.WorkerInterceptor.
func (i *activitySignals) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &activityInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, e: i.e}
}

type activityInbound struct {
	interceptor.ActivityInboundInterceptorBase
	e *Env
}

// ExecuteActivity implements interceptor.ActivityInboundInterceptor: the
// activity signals its run through the Env, and its context is cancelled
// when the run cancels it, as a heartbeat would tell it on a server (the
// SDK's test environment never does).
func (a *activityInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	ctx, cancel := context.WithCancel(activities.WithSignal(ctx, a.e.signalRun))
	id := activity.GetInfo(ctx).ActivityID
	a.e.mu.Lock()
	a.e.activities[id] = cancel
	a.e.mu.Unlock()
	defer func() {
		a.e.mu.Lock()
		delete(a.e.activities, id)
		a.e.mu.Unlock()
		cancel()
	}()
	return a.Next.ExecuteActivity(ctx, in)
}

// activityCancelled cancels the context of the activity the run cancelled.
func (e *Env) activityCancelled(info activity.Info) {
	e.mu.Lock()
	cancel := e.activities[info.ActivityID]
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// signalRun signals the run under test; workflowID must be its id. It is
// safe to call from an activity's goroutine.
func (e *Env) signalRun(_ context.Context, workflowID, _, name string, arg any) error {
	if workflowID != e.runID {
		return fmt.Errorf("workflowstest: signal %s to workflow %q: an activity in the test environment can only signal the run under test (%q)",
			name, workflowID, e.runID)
	}
	if p, ok := arg.(signals.Progress); ok && name == signals.SignalProgress {
		// The signal may reach the run in the workflow task that ends it,
		// whose snapshot observe never sees: record the report now.
		e.noteProgress(p)
	}
	e.env.SignalWorkflow(name, arg)
	return nil
}

// noteProgress records p (a report without a step keeps the current one),
// unless it was recorded before: a snapshot observed after an activity's
// report may still show an earlier report of it.
func (e *Env) noteProgress(p signals.Progress) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p.Step == "" && len(e.progress) > 0 {
		p.Step = e.progress[len(e.progress)-1].Step
	}
	if !slices.Contains(e.progress, p) {
		e.progress = append(e.progress, p)
	}
}
