package runs_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// TestStalledRunSaysSo: a run whose task queue no worker polls reads as
// stalled, naming the queue, rather than as a healthy running run.
func TestStalledRunSaysSo(t *testing.T) {
	s, _ := setupWith(t, func(o *runs.Options) { o.QueryPatience = 300 * time.Millisecond })
	ctx := ctxT(t)
	queue := testenv.UniqueTaskQueue(t) + "-nobody"
	snap, err := s.Start(ctx, runs.NewRun{Tool: signals.ToolSpec{Name: "conformance-delay", TaskQueue: queue},
		Arguments: json.RawMessage(`{"delayMs":1}`), Caller: alice, Transport: signals.TransportMCP})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, alice, snap.RunID)
	if err != nil || got.Status.Terminal() || !strings.Contains(got.StatusMessage, "stalled") || !strings.Contains(got.StatusMessage, queue) {
		t.Fatalf("Get of a run nobody serves = %q (%s), %v", got.StatusMessage, got.Status, err)
	}
}

// TestCancelRequestedWithoutWorker: a run whose cancellation was requested
// while no worker serves it reads cancelling (from what Temporal holds: the
// request, its time and its reason), stalled, for as long as it is open; a
// second cancel is accepted and keeps the first request's time; once
// terminated it reads cancelled. Before, it read as what it last published
// (pending), with nothing of the request.
func TestCancelRequestedWithoutWorker(t *testing.T) {
	s, c := setupWith(t, func(o *runs.Options) { o.QueryPatience = 300 * time.Millisecond })
	ctx := ctxT(t)
	queue := testenv.UniqueTaskQueue(t) + "-nobody"
	snap, err := s.Start(ctx, runs.NewRun{Tool: signals.ToolSpec{Name: "conformance-delay", TaskQueue: queue},
		Arguments: json.RawMessage(`{"delayMs":1}`), Caller: alice, Transport: signals.TransportMCP})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, alice, snap.RunID, ""); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, alice, snap.RunID)
	msg := got.CurrentMessage(time.Now())
	if err != nil || got.Status != signals.StatusCancelling || got.CancelRequestedAt.IsZero() || got.CancelReason != signals.ReasonCallerRequested ||
		!strings.HasPrefix(msg, "cancellation requested under a minute ago; the run has not closed yet; stalled") {
		t.Fatalf("Get of a cancelled run nobody serves = %+v (%q), %v", got, msg, err)
	}
	again, err := s.Cancel(ctx, alice, snap.RunID, "")
	if err != nil || again.Status != signals.StatusCancelling || !again.CancelRequestedAt.Equal(got.CancelRequestedAt) {
		t.Fatalf("second Cancel = %+v, %v; want cancelling since %v", again, err, got.CancelRequestedAt)
	}
	if err := c.TerminateWorkflow(ctx, snap.RunID, "", "nobody serves it"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, alice, snap.RunID); err != nil || got.Status != signals.StatusCancelled || got.CancelReason != "terminated: nobody serves it" {
		t.Fatalf("Get once terminated = %+v, %v", got, err)
	}
}
