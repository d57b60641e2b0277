package catalog_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
)

// raceOutcome is what one client saw calling a tool while its only worker
// stopped: the runs its calls started, when its first call was refused
// (zero: never), and what went wrong.
type raceOutcome struct {
	runs    []string
	lastRun time.Duration
	refused time.Duration
	err     error
}

// TestE2ECleanStopLosesNoCall races calls against the clean stop of a
// tool's only worker (a README worker, no option, stopped with SIGTERM):
// several clients call the tool without pause from before the signal
// until each is refused. Every call is either refused as unavailable or
// starts a run that completes: a call the server still routed to the
// worker after it withdrew its publication (the server takes a
// confirmation of the publication as good for 200 ms) is served by the
// worker, which keeps polling for catalog.StopGrace after it withdrew; no
// run is left waiting for a worker that is gone. Without the grace, every
// run started in the 250 ms before the first refusal was left unserved.
func TestE2ECleanStopLosesNoCall(t *testing.T) {
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	tool := unique("racing")
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{Namespace: env.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	url, _ := serveMount(t, env, live)
	w := startWorkerProcess(t, env, tool, tq, envDefaults+"=1")
	first := &mcpClient{t: t, url: url, caps: taskCaps}
	eventually(t, 2*waitBound, "the tool listed", func() (bool, string) { return first.toolNames()[tool] != nil, "" })
	runOf(t, first.result("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"text": "warm"}})["taskId"].(string))

	const clients = 4
	var (
		wg       sync.WaitGroup
		outcomes [clients]raceOutcome
		begun    = make(chan time.Time)
	)
	for i := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = raceStop(t, url, tool, begun)
		}()
	}
	time.Sleep(300 * time.Millisecond) // the clients calling
	stopped := time.Now()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	close(begun)
	wg.Wait()
	select {
	case err := <-w.done:
		w.done <- err
		if err != nil {
			t.Fatalf("the stopped worker exited with %v", err)
		}
	case <-time.After(waitBound):
		t.Fatalf("the worker did not exit within %s of SIGTERM", waitBound)
	}
	exited := time.Since(stopped)

	var started []string
	var lastRun, refused time.Duration
	for _, o := range outcomes {
		if o.err != nil {
			t.Fatal(o.err)
		}
		started = append(started, o.runs...)
		lastRun = max(lastRun, o.lastRun)
		if refused == 0 || o.refused < refused {
			refused = o.refused
		}
	}
	var unserved []string
	deadline := time.Now().Add(5 * time.Second)
	for _, runID := range started {
		if !runCompletes(t, env, runID, deadline) {
			unserved = append(unserved, runID)
		}
	}
	t.Logf("clean stop raced by %d clients: first refusal %s after SIGTERM, last run started %s after it, worker exited after %s; %d runs started since SIGTERM, %d left unserved",
		clients, refused.Round(time.Millisecond), lastRun.Round(time.Millisecond), exited.Round(time.Millisecond), len(started), len(unserved))
	if len(unserved) > 0 {
		t.Fatalf("%d runs started for the stopping worker never completed (no worker served them): %v", len(unserved), unserved)
	}
}

// raceStop calls tool without pause until a call is refused as
// unavailable after begun closed, and reports the runs started from the
// moment begun closed.
func raceStop(t *testing.T, url, tool string, begun <-chan time.Time) raceOutcome {
	c := &mcpClient{t: t, url: url, caps: taskCaps}
	var out raceOutcome
	var since time.Time
	for {
		if since.IsZero() {
			select {
			case <-begun:
				since = time.Now()
			default:
			}
		}
		r := c.call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"text": "racing"}})
		switch {
		case r.Error != nil && r.Error.Code == -32602 && !since.IsZero():
			out.refused = time.Since(since)
			return out
		case r.Error != nil || r.Result == nil:
			out.err = fmt.Errorf("a call while the worker stopped = HTTP %d %s, want a task or a refusal as unavailable", r.Status, r.Raw)
			return out
		}
		taskID, _ := r.Result["taskId"].(string)
		if !since.IsZero() {
			out.runs = append(out.runs, runOf(t, taskID))
			out.lastRun = time.Since(since)
		}
		if !since.IsZero() && time.Since(since) > waitBound {
			out.err = fmt.Errorf("calls still start runs %s after the worker was told to stop", waitBound)
			return out
		}
	}
}

// runCompletes reports whether run completes by deadline.
func runCompletes(t *testing.T, env *testenv.Env, runID string, deadline time.Time) bool {
	t.Helper()
	for {
		desc, err := env.Client.DescribeWorkflowExecution(context.Background(), runID, "")
		if err != nil {
			t.Fatal(err)
		}
		switch st := desc.GetWorkflowExecutionInfo().GetStatus(); {
		case st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			return true
		case st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			t.Fatalf("run %s ended %v, want it completed", runID, st)
		case time.Now().After(deadline):
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
