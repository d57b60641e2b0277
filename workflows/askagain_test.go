package workflows_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// reviewLoopTool asks for approval at node "review" until it is given (at
// most three times), each ask under its own key ("review-1", "review-2"),
// working a second between a rejection and the next ask, and answers
// the round that approved.
func reviewLoopTool() workflows.Tool {
	return workflows.NewTool("review_loop", "Ask for approval until given.", func(ctx workflow.Context, _ noInput) (map[string]any, error) {
		return workflows.Step(ctx, "review", func(ctx workflow.Context) (map[string]any, error) {
			for round := 1; round <= 3; round++ {
				d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: fmt.Sprintf("review-%d", round), Title: "Approve the plan?"})
				if err != nil {
					return nil, err
				}
				if d.Approved {
					return map[string]any{"round": round}, nil
				}
				if err := workflow.Sleep(ctx, time.Second); err != nil {
					return nil, err
				}
			}
			return map[string]any{"round": 0}, nil
		})
	})
}

// TestAskAgainLateResolution: the run's side of a question asked again.
// The first ask (wire key <runId>-i1) is rejected; an approval sent for it
// late (in the same workflow task as the rejection, while the run works
// before asking again, or once the second ask <runId>-i2 is open) is
// ignored: it never resolves the second ask, which stays open until its
// own answer, and the run completes in round 2 with exactly two
// resolutions, the first ask's rejection and the second's approval.
func TestAskAgainLateResolution(t *testing.T) {
	first, second := testRunID+"-i1", testRunID+"-i2"
	answer := func(id, action, req string) signals.Resolution {
		return signals.Resolution{InterruptID: id, Action: signals.ActionAccept, ResolvedBy: alice, RequestID: req,
			Content: json.RawMessage(`{"action":"` + action + `"}`)}
	}
	tests := []struct {
		name string
		late time.Duration // after the rejection at 1 s; -1: with it
	}{
		{"with the rejection", -1},
		{"while the run works before asking again", 500 * time.Millisecond},
		{"once the second ask is open", 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, reviewLoopTool())
			var open signals.Snapshot
			h.At(time.Second, func() {
				h.Resolve(answer(first, "reject", "r1"))
				if tt.late < 0 {
					h.Resolve(answer(first, "accept", "late"))
				}
			})
			if tt.late >= 0 {
				h.At(time.Second+tt.late, func() { h.Resolve(answer(first, "accept", "late")) })
			}
			h.At(4*time.Second, func() {
				open = snapshot(t, h)
				h.Resolve(answer(second, "accept", "r2"))
			})
			rec, err := run(t, h, "review_loop", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if len(open.Interrupts) != 1 || open.Interrupts[0].ID != second || open.Interrupts[0].Key != "review-2" || open.Interrupts[0].NodeID != "review" {
				t.Fatalf("before its answer the run had open %+v, want the second ask %s (key review-2, node review)", open.Interrupts, second)
			}
			s := rec.Snapshot
			if s.Status != signals.StatusCompleted || string(s.Outputs) != `{"round":2}` {
				t.Fatalf("run ended %s with %s, want completed in round 2", s.Status, s.Outputs)
			}
			if len(s.Resolved) != 2 || s.Resolved[0].InterruptID != first || s.Resolved[0].RequestID != "r1" ||
				s.Resolved[1].InterruptID != second || s.Resolved[1].RequestID != "r2" {
				t.Fatalf("resolved %+v, want the first ask's rejection r1 and the second's approval r2", s.Resolved)
			}
			checkLog(t, testRunID, rec.Events)
		})
	}
}
