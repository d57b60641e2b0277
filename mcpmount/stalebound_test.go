package mcpmount

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/grpc"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// slowCalls delays, while delay is set, every Temporal call of one client
// that names a workflow: the mount's fresh reads of a run are then slow.
type slowCalls struct {
	delay atomic.Int64 // nanoseconds; 0: none
}

func (s *slowCalls) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var id string
	switch r := req.(type) {
	case interface{ GetWorkflowId() string }:
		id = r.GetWorkflowId()
	case interface {
		GetExecution() *commonpb.WorkflowExecution
	}:
		id = r.GetExecution().GetWorkflowId()
	}
	if d := time.Duration(s.delay.Load()); id != "" && d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// TestSessionTasksGetStaleBound pins that a 2025-11-25 tasks/get takes the
// core's rule for stale reads (core.Tasks.Get, runs.AllowStaleWithin): a
// reading held while a fresh read is slow answers a poll only while it is
// no older than the poll interval the task was answered with. The run
// waits for input when the mount first reads it; another service cancels
// it; once the mount's reading is older than the task's pollInterval and
// the mount's Temporal reads are slow, tasks/get must wait for the fresh
// reading (cancelled) instead of answering the held one (input_required).
func TestSessionTasksGetStaleBound(t *testing.T) {
	slow := &slowCalls{}
	srv, id, other := approvalBehind(t, slow.intercept, 250*time.Millisecond, 250*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	get := func() map[string]any {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
			"params": map[string]any{"taskId": runid.Project(id)}})
		return wantResult(t, post(t, srv.URL, map[string]string{"Content-Type": "application/json",
			"Accept": acceptJSON, "MCP-Protocol-Version": "2025-11-25"}, body))
	}
	first := get()
	interval, _ := first["pollInterval"].(float64)
	if first["status"] != "input_required" || interval <= 0 {
		t.Fatalf("first tasks/get = %v, want input_required with a pollInterval", first)
	}
	if _, err := other.Cancel(ctx, auth.Anonymous(), id, signals.ReasonCallerRequested); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Await(ctx, auth.Anonymous(), id, func(s signals.Snapshot) bool { return s.Status.Terminal() }); err != nil {
		t.Fatal(err)
	}
	// The held reading is now older than the poll interval (and far
	// younger than the run service's own limit on stale readings).
	time.Sleep(time.Duration(interval)*time.Millisecond + 500*time.Millisecond)
	slow.delay.Store(int64(2 * time.Second))
	if got := get(); got["status"] != "cancelled" {
		t.Fatalf("tasks/get of a run cancelled %v ms after a poll answered %v, want cancelled: a reading older than the task's poll interval answered",
			interval, got)
	}
}
