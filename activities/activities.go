package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/openwop/temporal-mcp/signals"
)

// DefaultInterval is how often Run heartbeats when it is given no interval.
const DefaultInterval = time.Second

// Progress says how far an activity has got. It is meant to be the details
// of the activity's heartbeats (see RecordProgress and Run), encoded as JSON
// by the default data converter.
type Progress struct {
	// Done is the amount of work done so far, in the activity's own unit
	// (items, bytes, sections).
	Done int64 `json:"done"`
	// Total is the amount of work in all, in the same unit; zero when it is
	// not known.
	Total int64 `json:"total,omitempty"`
	// Step names what the activity is doing, e.g. "upload"; empty for none.
	Step string `json:"step,omitempty"`
}

// RecordProgress records p as the heartbeat details of ctx's activity. It
// heartbeats, so a cancellation of the activity can cancel ctx after it.
// ctx must be an activity's context.
func RecordProgress(ctx context.Context, p Progress) {
	activity.RecordHeartbeat(ctx, p)
}

// ReportProgress is RecordProgress that also tells the activity's run: it
// signals the workflow with signals.SignalProgress, so that the run's
// snapshot and status message carry p (docs/contract.md, "Progress").
// Each call is one signal (an event in the run's history), so call it
// when the progress changes, not in a tight loop. p.Step must be a
// declared name, never content. It fails when the signal cannot be sent.
// ctx must be an activity's context.
func ReportProgress(ctx context.Context, p Progress) error {
	RecordProgress(ctx, p)
	info := activity.GetInfo(ctx)
	signal := signalOf(ctx) // set by WithSignal (workflowstest)
	if signal == nil {
		signal = activity.GetClient(ctx).SignalWorkflow
	}
	err := signal(ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID,
		signals.SignalProgress, signals.Progress{Step: p.Step, Done: p.Done, Total: p.Total})
	if err != nil {
		return fmt.Errorf("report progress to run %s: %w", info.WorkflowExecution.ID, err)
	}
	return nil
}

// LastProgress returns the progress the previous attempt of ctx's activity
// recorded last, and whether there is one: a retried activity resumes from
// it. It reports false when the previous attempt recorded no heartbeat
// details or details that are not a Progress.
func LastProgress(ctx context.Context) (Progress, bool) {
	if !activity.HasHeartbeatDetails(ctx) {
		return Progress{}, false
	}
	var p Progress
	if err := activity.GetHeartbeatDetails(ctx, &p); err != nil {
		return Progress{}, false
	}
	return p, true
}

// Run calls work with ctx and, while work runs, heartbeats ctx's activity:
// once right away and then every interval (DefaultInterval when interval is not
// positive), each heartbeat carrying what details returns (a Progress, say),
// or no details when details is nil. It returns what work returns.
//
// The heartbeats carry a cancellation of the activity to it: the SDK then
// cancels ctx, and work must return soon after ctx is done (with ctx's
// error, or an error wrapping it). Run stops heartbeating when ctx is done
// or work has returned; details is called on a goroutine of Run's, so it
// must be safe to call while work runs. ctx must be an activity's context.
//
// A cancellation is the normal end of a cancelled run, not a failure: when
// ctx was cancelled and work returns an error that is context.Canceled or
// wraps it, Run returns it wrapped in an application error of the benign
// category (type CancelledErrorType; errors.Is(err, context.Canceled)
// still holds). The SDK then logs it at DEBUG level, not as an ERROR
// "Activity error.", and still reports the activity as cancelled to the
// run (a worker's stop, which also cancels ctx, reports it as failed, to
// be retried, as before).
func Run(ctx context.Context, interval time.Duration, details func() any, work func(ctx context.Context) error) error {
	if interval <= 0 {
		interval = DefaultInterval
	}
	beat := func() {
		if details == nil {
			activity.RecordHeartbeat(ctx)
			return
		}
		activity.RecordHeartbeat(ctx, details())
	}
	beat()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				beat()
			}
		}
	})
	defer wg.Wait()
	defer close(stop)
	return quiet(ctx, work(ctx))
}

// CancelledErrorType is the type of the application error Run returns
// when its activity was cancelled (temporal.ApplicationError.Type).
const CancelledErrorType = "ActivityCancelled"

// quiet returns err as a benign application error when it is the
// cancellation of ctx, and err unchanged otherwise.
func quiet(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	return temporal.NewApplicationErrorWithOptions("activity cancelled: "+err.Error(), CancelledErrorType,
		temporal.ApplicationErrorOptions{Category: temporal.ApplicationErrorCategoryBenign, Cause: err})
}
