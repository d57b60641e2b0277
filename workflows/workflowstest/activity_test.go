package workflowstest_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// crunchIn is the input of the crunch tool.
type crunchIn struct {
	Days int64 `json:"days"`
	// FailAfter makes the first attempt fail once it has done that many
	// days (0: never), so that the retry resumes from its progress.
	FailAfter int64 `json:"failAfter,omitempty"`
	// Hang makes the activity wait, after the first day, until it is
	// cancelled.
	Hang bool `json:"hang,omitempty"`
}

// crunchOut is what the crunch tool returns.
type crunchOut struct {
	Days    int64 `json:"days"`
	Resumed int64 `json:"resumed"` // the day the last attempt started from
}

// crunch runs crunchDays in its step "crunch", with a heartbeat timeout
// and one retry.
func crunch(ctx workflow.Context, in crunchIn) (crunchOut, error) {
	return workflows.Step(ctx, "crunch", func(ctx workflow.Context) (crunchOut, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Hour, HeartbeatTimeout: 5 * time.Second,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 2, InitialInterval: time.Second},
		})
		var out crunchOut
		err := workflow.ExecuteActivity(ctx, "crunchDays", in).Get(ctx, &out)
		return out, err
	})
}

// cruncher holds the crunchDays activity; ended receives what each of its
// attempts returned. reported, when set, is called once a hanging attempt
// has reported its first day to the run.
type cruncher struct {
	ended    chan error
	reported func()
}

// crunchDays processes in.Days days, from the progress of the attempt
// before (activities.LastProgress), heartbeating through activities.Run
// and reporting each day done to the run.
func (c *cruncher) crunchDays(ctx context.Context, in crunchIn) (out crunchOut, err error) {
	defer func() { c.ended <- err }()
	var from int64
	if p, ok := activities.LastProgress(ctx); ok {
		from = p.Done
	}
	var done atomic.Int64
	done.Store(from)
	progress := func() any { return activities.Progress{Done: done.Load(), Total: in.Days} }
	err = activities.Run(ctx, time.Second, progress, func(ctx context.Context) error {
		for d := from + 1; d <= in.Days; d++ {
			done.Store(d)
			if err := activities.ReportProgress(ctx, activities.Progress{Done: d, Total: in.Days}); err != nil {
				return err
			}
			if d == in.FailAfter && activity.GetInfo(ctx).Attempt == 1 {
				return errors.New("the first attempt fails")
			}
			if in.Hang {
				if c.reported != nil {
					c.reported()
				}
				<-ctx.Done()
				return ctx.Err()
			}
		}
		return nil
	})
	return crunchOut{Days: done.Load(), Resumed: from}, err
}

// TestActivityProgressAndCancellation: an activity that heartbeats
// (activities.Run), reports its progress (activities.ReportProgress),
// resumes from it on a retry (activities.LastProgress) and is cancelled
// runs in the kit, and Result.Progress holds what it reported.
func TestActivityProgressAndCancellation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     crunchIn
		cancel bool // cancel the run once the activity reported its first day
		status signals.Status
		out    crunchOut
		last   signals.Progress // the last progress the run reported
	}{
		{name: "reports each day", in: crunchIn{Days: 3}, status: signals.StatusCompleted, out: crunchOut{Days: 3},
			last: signals.Progress{Step: "crunch", Done: 3, Total: 3}},
		{name: "retry resumes from the last progress", in: crunchIn{Days: 4, FailAfter: 2}, status: signals.StatusCompleted,
			out: crunchOut{Days: 4, Resumed: 2}, last: signals.Progress{Step: "crunch", Done: 4, Total: 4}},
		{name: "cancelled while it works", in: crunchIn{Days: 3, Hang: true}, cancel: true, status: signals.StatusCancelled,
			last: signals.Progress{Step: "crunch", Done: 1, Total: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cruncher{ended: make(chan error, 2)}
			reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("crunch", "Crunch some days.", crunch)}, c.crunchDays)
			if err != nil {
				t.Fatal(err)
			}
			env := workflowstest.New(reg)
			if tc.cancel {
				// Cancel once the activity has reported its first day (at
				// a heartbeat, the report could still be on its way).
				var once sync.Once
				c.reported = func() { once.Do(func() { env.Cancel("") }) }
			}
			res, err := env.Call("crunch", tc.in)
			if err != nil {
				t.Fatalf("Call = %v", err)
			}
			if res.Status() != tc.status {
				t.Fatalf("status = %s, want %s (%+v)", res.Status(), tc.status, res.Snapshot)
			}
			if tc.status == signals.StatusCompleted {
				var out crunchOut
				if err := res.Output(&out); err != nil || out != tc.out {
					t.Fatalf("output = %+v, %v; want %+v", out, err, tc.out)
				}
			}
			// The run publishes its progress once per workflow task, so
			// days reported together are seen as the last of them.
			p := res.Progress
			if len(p) < 2 || p[0] != (signals.Progress{Step: "crunch"}) || p[len(p)-1] != tc.last {
				t.Fatalf("Progress = %+v, want the step, then counts up to %+v", p, tc.last)
			}
			for i := 2; i < len(p); i++ {
				if p[i].Done <= p[i-1].Done || p[i].Total != tc.in.Days {
					t.Fatalf("Progress = %+v, want counts that grow", p)
				}
			}
			if tc.cancel {
				// The activity saw its cancellation: its context ended.
				select {
				case err := <-c.ended:
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("the cancelled activity returned %v, want its context's cancellation", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the cancelled activity did not return within 10 s")
				}
			}
		})
	}
}
