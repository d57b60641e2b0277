package runs_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// TestResolveExpired: an answer to a question whose deadline passed (the
// run withdrew it and asked another) is refused with ErrExpired, which is
// also ErrNotOpen (tasks/update ignores it), and resolves nothing: the
// other question stays open.
func TestResolveExpired(t *testing.T) {
	s, _ := setup(t)
	ctx := ctxT(t)
	snap := start(t, s, "approve_expense",
		`{"amount":12,"purpose":"taxi","escalateAfterSeconds":1,"managers":["urn:test:bob"],"directors":["urn:test:alice"]}`, alice)
	manager, director := snap.RunID+"-i1", snap.RunID+"-i2"
	snap, err := s.Await(ctx, alice, snap.RunID, func(s signals.Snapshot) bool {
		_, open := s.Interrupt(director)
		return open || s.Status.Terminal()
	})
	if err != nil {
		t.Fatal(err)
	}
	if w, gone := snap.WithdrawnAs(manager); !gone || w.Reason != signals.WithdrawnExpired || len(snap.Interrupts) != 1 {
		t.Fatalf("after the deadline: open %+v, withdrawn %+v; want only the director's question open", snap.Interrupts, snap.Withdrawn)
	}
	late := signals.Resolution{InterruptID: manager, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"accept"}`)}
	after, err := s.Resolve(ctx, bob, snap.RunID, late)
	if !errors.Is(err, runs.ErrExpired) || !errors.Is(err, runs.ErrNotOpen) {
		t.Fatalf("the late answer: %v, want ErrExpired (and ErrNotOpen)", err)
	}
	if _, open := after.Interrupt(director); !open || len(after.Resolved) != 0 {
		t.Fatalf("after the late answer: open %+v, resolved %+v", after.Interrupts, after.Resolved)
	}
	if _, err := s.Cancel(ctx, alice, snap.RunID, ""); err != nil {
		t.Fatal(err)
	}
}
