package workflows_test

// Progress across a worker crash: a real worker process (this test binary,
// started again as a worker of the test's Temporal server) killed with
// SIGKILL while its activity reports progress, and a new worker that runs
// the retried attempt.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// The environment of a worker process (TestProgressWorkerProcess).
const (
	envCrashAddress   = "OPENWOP_WORKFLOWS_TEST_ADDRESS" // unset: not a worker process
	envCrashNamespace = "OPENWOP_WORKFLOWS_TEST_NAMESPACE"
	envCrashQueue     = "OPENWOP_WORKFLOWS_TEST_QUEUE"
)

const (
	// countTotal is how many steps the counting activity works.
	countTotal = 8
	// crashAfter is the step after which the test kills the worker.
	crashAfter = 5
	// slowStep is how long a step takes in the worker process: longer than
	// the heartbeat interval (1 s), so that losing at most one interval of
	// progress loses at most one step.
	slowStep = 1500 * time.Millisecond
)

// counted is what the counting activity returns: the attempt that
// finished and where it resumed.
type counted struct {
	Attempt   int32 `json:"attempt"`
	ResumedAt int64 `json:"resumedAt"`
}

// countActs counts to countTotal, one step every step, reporting its
// progress after each, and resumes from the last progress of a previous
// attempt.
type countActs struct {
	step time.Duration
}

// Count counts the steps left.
func (a *countActs) Count(ctx context.Context) (counted, error) {
	out := counted{Attempt: activity.GetInfo(ctx).Attempt}
	var done atomic.Int64
	if last, ok := activities.LastProgress(ctx); ok {
		done.Store(last.Done)
		out.ResumedAt = last.Done
	}
	progress := func() any { return activities.Progress{Done: done.Load(), Total: countTotal, Step: "count"} }
	err := activities.Run(ctx, 0, progress, func(ctx context.Context) error {
		for done.Load() < countTotal {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(a.step):
			}
			n := done.Add(1)
			if err := activities.ReportProgress(ctx, activities.Progress{Done: n, Total: countTotal, Step: "count"}); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// countRegistry is the registry of the counting tool, whose activity
// takes step per step and has the 5 s HeartbeatTimeout the package doc
// suggests.
func countRegistry(step time.Duration) (*workflows.Registry, error) {
	acts := &countActs{step: step}
	tool := workflows.NewTool("count_steps", "Counts steps in a heartbeating activity.",
		func(ctx workflow.Context, _ noInput) (counted, error) {
			opts := workflow.GetActivityOptions(ctx)
			opts.HeartbeatTimeout = 5 * time.Second
			ctx = workflow.WithActivityOptions(ctx, opts)
			var out counted
			err := workflow.ExecuteActivity(ctx, acts.Count).Get(ctx, &out)
			return out, err
		})
	return workflows.NewRegistry([]workflows.Tool{tool}, acts)
}

// TestProgressWorkerProcess is not a test: started by
// TestIntegrationProgressSurvivesWorkerCrash, it is a worker of the
// counting tool, with slow steps, until it is killed.
func TestProgressWorkerProcess(t *testing.T) {
	addr := os.Getenv(envCrashAddress)
	if addr == "" {
		t.Skip("run by TestIntegrationProgressSurvivesWorkerCrash as a worker process")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: os.Getenv(envCrashNamespace)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg, err := countRegistry(slowStep)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Run(ctx, c, os.Getenv(envCrashQueue), workflows.WorkerOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationProgressSurvivesWorkerCrash: an activity that reports its
// progress with activities.ReportProgress after each step, on a worker of
// Registry.Run with no option set and the 5 s HeartbeatTimeout the docs
// suggest, loses at most one heartbeat interval of it when its worker is
// killed with SIGKILL: the retried attempt, on a new worker, reads with
// activities.LastProgress a step at most one behind the last the run was
// told of, and the progress the run reports never goes back further.
func TestIntegrationProgressSurvivesWorkerCrash(t *testing.T) {
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	reg, err := countRegistry(10 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestProgressWorkerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashAddress+"="+env.Address, envCrashNamespace+"="+env.Namespace, envCrashQueue+"="+tq)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // killed: an error
		close(exited)
	}()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()

	s := &server{t: t, c: env.Client, tq: tq, reg: reg, env: env}
	id, run := s.start("count_steps", map[string]any{})
	seen := s.awaitProgress(id, crashAfter, time.Minute)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-exited

	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(runCtx, env.Client, tq, workflows.WorkerOptions{}) }()
	defer func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("worker: %v", err)
		}
	}()
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rec signals.RunRecord
	if err := run.Get(wctx, &rec); err != nil {
		t.Fatalf("run: %v", err)
	}
	var out counted
	if err := json.Unmarshal(rec.Snapshot.Outputs, &out); err != nil {
		t.Fatalf("outputs %s: %v", rec.Snapshot.Outputs, err)
	}
	t.Logf("killed after step %d was reported; attempt %d resumed at step %d; the run completed %s after the kill",
		seen, out.Attempt, out.ResumedAt, time.Since(killed).Round(time.Millisecond))
	if out.Attempt < 2 || out.ResumedAt < seen-1 {
		t.Fatalf("attempt %d resumed at step %d; the run had been told of step %d before the kill, want at most one step lost",
			out.Attempt, out.ResumedAt, seen)
	}
	reported := s.reportedProgress(id)
	maxDone := int64(0)
	for i, d := range reported {
		if d < maxDone-1 {
			t.Fatalf("reported progress %v goes back from %d to %d at report %d", reported, maxDone, d, i)
		}
		maxDone = max(maxDone, d)
	}
	if maxDone != countTotal {
		t.Fatalf("reported progress %v never reached %d", reported, countTotal)
	}
}

// awaitProgress polls the run's snapshot until its progress has reached
// done, and returns the progress it saw then.
func (s *server) awaitProgress(id string, done int64, within time.Duration) int64 {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		if p := s.snapshot(id).Progress; p != nil && p.Done >= done {
			return p.Done
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s did not report step %d within %s", id, done, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reportedProgress returns the Done of every progress signal of the run,
// in the order the run received them.
func (s *server) reportedProgress(id string) []int64 {
	s.t.Helper()
	var out []int64
	it := s.c.GetWorkflowHistory(ctx(s.t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		a := e.GetWorkflowExecutionSignaledEventAttributes()
		if a == nil || a.GetSignalName() != signals.SignalProgress {
			continue
		}
		var p signals.Progress
		if err := converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &p); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, p.Done)
	}
	return out
}
