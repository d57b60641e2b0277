package runs_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// TestIdempotentStart: a start with an idempotency key happens at most
// once per tenant, tool and key, whatever the order of the arguments' keys;
// the same key with other arguments is refused; a run of the key that was
// cancelled before any caller held it is not a promise, and the next start
// makes a fresh one; a run that ended is answered as it ended.
func TestIdempotentStart(t *testing.T) {
	s, c := setup(t)
	ctx := ctxT(t)
	startKey := func(caller signals.Subject, tool, args, key string) (signals.Snapshot, error) {
		return s.Start(ctx, runs.NewRun{Tool: signals.ToolSpec{Name: tool}, Arguments: json.RawMessage(args),
			Caller: caller, Transport: signals.TransportMCP, IdempotencyKey: key})
	}
	first, err := startKey(alice, "conformance-delay", `{"delayMs":60000,"label":"x"}`, "k1")
	if err != nil {
		t.Fatal(err)
	}
	desc, err := c.DescribeWorkflowExecution(ctx, first.RunID, "")
	if err != nil {
		t.Fatal(err)
	}
	temporalRun := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()

	for _, tc := range []struct {
		name     string
		caller   signals.Subject
		tool     string
		args     string
		key      string
		same     bool
		wantErr  error
		wantNote string
	}{
		{name: "retry", caller: alice, tool: "conformance-delay", args: `{"delayMs":60000,"label":"x"}`, key: "k1", same: true},
		{name: "retry, keys reordered and spaced", caller: alice, tool: "conformance-delay", args: `{ "label":"x", "delayMs":60000 }`, key: "k1", same: true},
		{name: "another subject of the tenant", caller: bob, tool: "conformance-delay", args: `{"delayMs":60000,"label":"x"}`, key: "k1", same: true},
		{name: "other arguments", caller: alice, tool: "conformance-delay", args: `{"delayMs":1,"label":"x"}`, key: "k1", wantErr: runs.ErrKeyReused},
		{name: "another key", caller: alice, tool: "conformance-delay", args: `{"delayMs":1}`, key: "k2"},
		{name: "another tool", caller: alice, tool: "conformance-cancellable", args: `{"delayMs":1}`, key: "k1"},
		{name: "another tenant", caller: mallory, tool: "conformance-delay", args: `{"delayMs":60000,"label":"x"}`, key: "k1"},
	} {
		got, err := startKey(tc.caller, tc.tool, tc.args, tc.key)
		switch {
		case tc.wantErr != nil:
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: Start = %+v, %v; want %v", tc.name, got, err, tc.wantErr)
			}
			continue
		case err != nil:
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (got.RunID == first.RunID) != tc.same {
			t.Errorf("%s: run %s, first run %s, want the same: %v", tc.name, got.RunID, first.RunID, tc.same)
		}
	}
	desc, err = c.DescribeWorkflowExecution(ctx, first.RunID, "")
	if err != nil || desc.GetWorkflowExecutionInfo().GetExecution().GetRunId() != temporalRun {
		t.Fatalf("the retries started the workflow again: %v, %v", desc.GetWorkflowExecutionInfo().GetExecution(), err)
	}

	// Abandoned (its request went away before it was answered): a fresh run.
	if _, err := s.Cancel(ctx, alice, first.RunID, signals.ReasonMCPRequestCancelled); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Await(ctx, alice, first.RunID, terminal); err != nil {
		t.Fatal(err)
	}
	fresh, err := startKey(alice, "conformance-delay", `{"delayMs":1,"label":"x"}`, "k1")
	if !errors.Is(err, runs.ErrKeyReused) {
		t.Fatalf("other arguments after the abandoned run = %+v, %v; want ErrKeyReused", fresh, err)
	}
	fresh, err = startKey(alice, "conformance-delay", `{"delayMs":60000,"label":"x"}`, "k1")
	if err != nil || fresh.RunID == first.RunID || fresh.Status.Terminal() {
		t.Fatalf("start after the abandoned run = %+v, %v; want a fresh run", fresh, err)
	}

	// Cancelled by its caller: a promise kept, answered as it ended.
	if _, err := s.Cancel(ctx, alice, fresh.RunID, signals.ReasonCallerRequested); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Await(ctx, alice, fresh.RunID, terminal); err != nil {
		t.Fatal(err)
	}
	again, err := startKey(alice, "conformance-delay", `{"delayMs":60000,"label":"x"}`, "k1")
	if err != nil || again.RunID != fresh.RunID || again.Status != signals.StatusCancelled {
		t.Fatalf("start after the caller's cancel = %+v, %v; want that run, cancelled", again, err)
	}
}

func TestValidIdempotencyKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"", false},
		{"a", true},
		{"order-42/retry 1", true},
		{string(make([]byte, 256)), false},
		{"tab\there", false},
		{"é", false},
	} {
		if got := runs.ValidIdempotencyKey(tc.key); got != tc.want {
			t.Errorf("ValidIdempotencyKey(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}
