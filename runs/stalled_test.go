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
