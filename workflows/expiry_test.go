package workflows_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// timedAskTool asks for approval at step review, after reporting its
// progress 1/2, with a deadline of an hour, and answers how the question
// ended: the decision, or the error's kind.
func timedAskTool() workflows.Tool {
	return workflows.NewTool("timed_ask", "Ask with a deadline.", func(ctx workflow.Context, _ noInput) (map[string]any, error) {
		return workflows.Step(ctx, "review", func(ctx workflow.Context) (map[string]any, error) {
			if err := workflows.ReportProgress(ctx, 1, 2); err != nil {
				return nil, err
			}
			d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "review", Title: "Approve?", Timeout: time.Hour})
			switch {
			case errors.Is(err, workflows.ErrExpired):
				// Work on a while: the run shows its progress again.
				return map[string]any{"expired": true}, workflow.Sleep(ctx, time.Hour)
			case err != nil:
				return nil, err
			}
			return map[string]any{"approved": d.Approved}, nil
		})
	})
}

// cancelledAskTool is the newcomer's escalation: the ask of a context a
// timer cancels after an hour, then another ask.
func cancelledAskTool() workflows.Tool {
	return workflows.NewTool("cancelled_ask", "Escalate by cancelling the ask.", func(ctx workflow.Context, _ noInput) (map[string]any, error) {
		actx, cancel := workflow.WithCancel(ctx)
		workflow.Go(ctx, func(c workflow.Context) {
			if workflow.Sleep(c, time.Hour) == nil {
				cancel()
			}
		})
		d, err := workflows.Approve(actx, workflows.ApprovalRequest{Key: "first", Title: "Approve?"})
		if temporal.IsCanceledError(err) && ctx.Err() == nil {
			d, err = workflows.Approve(ctx, workflows.ApprovalRequest{Key: "second", Title: "Approve?"})
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{"by": d.By.SubjectID}, nil
	})
}

// withdrawTool raises two questions, withdraws the first and waits for
// both.
func withdrawTool() workflows.Tool {
	return workflows.NewTool("withdraw", "Withdraw a question.", func(ctx workflow.Context, _ noInput) (map[string]any, error) {
		a, err := workflows.Raise(ctx, workflows.QuestionSpec{Kind: signals.KindApproval, Key: "a", Title: "A?"})
		if err != nil {
			return nil, err
		}
		b, err := workflows.Raise(ctx, workflows.QuestionSpec{Kind: signals.KindApproval, Key: "b", Title: "B?"})
		if err != nil {
			return nil, err
		}
		a.Withdraw()
		_, aerr := a.Wait(ctx)
		if _, err := b.Wait(ctx); err != nil {
			return nil, err
		}
		b.Withdraw() // answered: nothing to withdraw
		return map[string]any{"a": errors.Is(aerr, workflows.ErrWithdrawn)}, nil
	})
}

func approval(id, req string) signals.Resolution {
	return signals.Resolution{InterruptID: id, Action: signals.ActionAccept, ResolvedBy: alice, RequestID: req,
		Content: json.RawMessage(`{"action":"accept"}`)}
}

// TestQuestionExpires: a question with a Timeout publishes its deadline
// (expiresAt, and timeoutMs on interrupt.requested); unanswered, it is
// withdrawn when the deadline passes (virtual time): it leaves the open
// interrupts at once, the snapshot records it as expired, the log gets
// interrupt.withdrawn, the run shows its step's progress again, and the
// ask returns ErrExpired. A late answer resolves nothing. An answer in
// time decides as before.
func TestQuestionExpires(t *testing.T) {
	t.Run("expires", func(t *testing.T) {
		h := newHarness(t, timedAskTool())
		var open, after signals.Snapshot
		h.At(time.Minute, func() { open = snapshot(t, h) })
		h.At(time.Hour+time.Minute, func() {
			after = snapshot(t, h)
			h.Resolve(approval(testRunID+"-i1", "late"))
		})
		res, err := h.Call("timed_ask", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if len(open.Interrupts) != 1 || open.Interrupts[0].ExpiresAt == nil ||
			!open.Interrupts[0].ExpiresAt.Equal(open.Interrupts[0].RequestedAt.Add(time.Hour)) {
			t.Fatalf("open interrupts %+v, want one expiring an hour after it was asked", open.Interrupts)
		}
		if after.Status != signals.StatusRunning || len(after.Interrupts) != 0 || after.StatusMessage != "the run is running: step review (1/2)" {
			t.Fatalf("after the deadline: status %s (%q), open %+v; want running with its progress, none open",
				after.Status, after.StatusMessage, after.Interrupts)
		}
		s := res.Snapshot
		if string(s.Outputs) != `{"expired":true}` || len(s.Resolved) != 0 {
			t.Fatalf("outputs %s, resolved %+v: want expired, nothing resolved", s.Outputs, s.Resolved)
		}
		if w, ok := s.WithdrawnAs(testRunID + "-i1"); !ok || w.Reason != signals.WithdrawnExpired || !w.WithdrawnAt.Equal(*open.Interrupts[0].ExpiresAt) {
			t.Fatalf("withdrawn = %+v, want the question expired at its deadline", s.Withdrawn)
		}
		if got := res.Statuses; len(got) < 3 || got[len(got)-3] != signals.StatusWaitingApproval || got[len(got)-2] != signals.StatusRunning {
			t.Errorf("statuses %v, want waiting-approval, then running again", got)
		}
		var requested, withdrawn map[string]any
		for _, e := range res.Events {
			switch e.Type {
			case signals.EventInterruptRequested:
				_ = json.Unmarshal(e.Payload, &requested)
			case signals.EventInterruptWithdrawn:
				_ = json.Unmarshal(e.Payload, &withdrawn)
			}
		}
		if requested["timeoutMs"] != float64(time.Hour/time.Millisecond) || requested["expiresAt"] == nil {
			t.Errorf("interrupt.requested = %v, want timeoutMs and expiresAt", requested)
		}
		if withdrawn["reason"] != signals.WithdrawnExpired || withdrawn["key"] != "review" || withdrawn["nodeId"] != "review" {
			t.Errorf("interrupt.withdrawn = %v", withdrawn)
		}
		checkLog(t, testRunID, res.Events)
	})
	t.Run("answered in time", func(t *testing.T) {
		h := newHarness(t, timedAskTool())
		h.At(30*time.Minute, func() { h.Resolve(approval(testRunID+"-i1", "r1")) })
		rec, err := run(t, h, "timed_ask", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if s := rec.Snapshot; string(s.Outputs) != `{"approved":true}` || len(s.Withdrawn) != 0 || count(rec.Events, signals.EventInterruptWithdrawn) != 0 {
			t.Fatalf("outputs %s, withdrawn %+v: want approved, nothing withdrawn", s.Outputs, s.Withdrawn)
		}
	})
}

// TestCancelledAskWithdraws: an ask whose context is cancelled while the
// run goes on withdraws its question: it leaves the open interrupts, a
// late answer to it is ignored, and the next question decides.
func TestCancelledAskWithdraws(t *testing.T) {
	first, second := testRunID+"-i1", testRunID+"-i2"
	h := newHarness(t, cancelledAskTool())
	var open signals.Snapshot
	h.At(time.Hour+time.Minute, func() {
		open = snapshot(t, h)
		h.Resolve(approval(first, "late"))
	})
	h.At(time.Hour+2*time.Minute, func() {
		r := approval(second, "r2")
		r.ResolvedBy = bob
		h.Resolve(r)
	})
	rec, err := run(t, h, "cancelled_ask", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if len(open.Interrupts) != 1 || open.Interrupts[0].ID != second {
		t.Fatalf("open after the escalation: %+v, want only %s", open.Interrupts, second)
	}
	s := rec.Snapshot
	if string(s.Outputs) != `{"by":"bob"}` || len(s.Resolved) != 1 || s.Resolved[0].InterruptID != second {
		t.Fatalf("outputs %s, resolved %+v: want the second ask's answer only", s.Outputs, s.Resolved)
	}
	if w, ok := s.WithdrawnAs(first); !ok || w.Reason != signals.WithdrawnByRun {
		t.Fatalf("withdrawn = %+v, want %s withdrawn", s.Withdrawn, first)
	}
}

// TestWithdraw: Pending.Withdraw closes an open question (Wait returns
// ErrWithdrawn) and does nothing to one answered.
func TestWithdraw(t *testing.T) {
	h := newHarness(t, withdrawTool())
	var open signals.Snapshot
	h.At(time.Minute, func() {
		open = snapshot(t, h)
		h.Resolve(approval(testRunID+"-i1", "late"))
		h.Resolve(approval(testRunID+"-i2", "r2"))
	})
	rec, err := run(t, h, "withdraw", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if len(open.Interrupts) != 1 || open.Interrupts[0].Key != "b" || open.Status != signals.StatusWaitingApproval {
		t.Fatalf("open %+v (%s), want only b", open.Interrupts, open.Status)
	}
	s := rec.Snapshot
	if string(s.Outputs) != `{"a":true}` || len(s.Withdrawn) != 1 || len(s.Resolved) != 1 || s.Resolved[0].RequestID != "r2" {
		t.Fatalf("outputs %s, withdrawn %+v, resolved %+v", s.Outputs, s.Withdrawn, s.Resolved)
	}
}

// TestTimedAskCancelled: a run cancelled while a question with a deadline
// is open ends cancelled at once; the question is closed with the run,
// not withdrawn.
func TestTimedAskCancelled(t *testing.T) {
	h := newHarness(t, timedAskTool())
	h.At(time.Minute, func() { h.Cancel("") })
	rec, err := run(t, h, "timed_ask", map[string]any{})
	if !temporal.IsCanceledError(err) {
		t.Fatalf("err = %v, want cancelled", err)
	}
	if s := rec.Snapshot; s.Status != signals.StatusCancelled || len(s.Withdrawn) != 0 || len(s.Interrupts) != 0 ||
		!s.UpdatedAt.Before(s.CreatedAt.Add(time.Hour)) {
		t.Fatalf("snapshot %+v, want cancelled before the deadline, nothing withdrawn", s)
	}
}
