package tools_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// A manager and a director of the caller's tenant, approvers by the
// default groups of approve_expense.
var (
	maria = signals.Subject{Issuer: "test", SubjectID: "maria", Tenant: "acme", Groups: []string{"managers"}}
	dora  = signals.Subject{Issuer: "test", SubjectID: "dora", Tenant: "acme", Groups: []string{"directors"}}
)

// escalateAfter is the deadline the tests give the managers.
const escalateAfter = time.Hour

func expenseArgs() tools.ApproveExpenseInput {
	return tools.ApproveExpenseInput{Amount: 120.5, Purpose: "team dinner", EscalateAfterSeconds: int(escalateAfter / time.Second)}
}

// TestApproveExpense: a manager who answers in time decides, and the
// expense is booked with its progress reported; without a manager's
// answer the question expires at the deadline (virtual time), leaves the
// open questions (its deadline was published), a director is asked
// instead and decides, and the manager's late answer is refused as
// expired and reaches nothing.
func TestApproveExpense(t *testing.T) {
	tests := []struct {
		name      string
		answer    func(env *workflowstest.Env)
		escalated bool
		by        string
		approved  bool
	}{
		{"the manager approves in time", func(env *workflowstest.Env) {
			env.Answer("manager", workflowstest.Choose("accept").As(maria))
		}, false, "maria", true},
		{"the director approves after the deadline; the manager's late answer is refused", func(env *workflowstest.Env) {
			env.AnswerAt(escalateAfter+time.Minute, "manager", workflowstest.Choose("reject").As(maria))
			env.AnswerAt(escalateAfter+2*time.Minute, "director", workflowstest.Choose("accept").As(dora))
		}, true, "dora", true},
		{"the director rejects", func(env *workflowstest.Env) {
			env.Answer("director", workflowstest.Choose("reject").As(dora))
		}, true, "dora", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			tt.answer(env)
			res, err := env.Call("approve_expense", expenseArgs())
			if err != nil {
				t.Fatal(err)
			}
			var out tools.ApproveExpenseOutput
			if err := res.Output(&out); err != nil {
				t.Fatal(err)
			}
			if out.Escalated != tt.escalated || out.DecidedBy != tt.by || out.Approved != tt.approved ||
				(out.BookingRef != "") != tt.approved || out.ExpenseID == "" {
				t.Fatalf("output = %+v", out)
			}
			mgr, ok := res.Question("manager")
			if !ok || mgr.Interrupt.ExpiresAt == nil || !mgr.Interrupt.ExpiresAt.Equal(mgr.Interrupt.RequestedAt.Add(escalateAfter)) {
				t.Fatalf("manager's question = %+v, want it to expire %v after it was asked", mgr.Interrupt, escalateAfter)
			}
			if tt.approved {
				last := res.Progress[len(res.Progress)-1]
				if last != (signals.Progress{Step: "book", Done: 4, Total: 4}) {
					t.Errorf("progress = %+v, want the booking's up to 4/4", res.Progress)
				}
			}
			if !tt.escalated {
				return
			}
			dir, _ := res.Question("director")
			if got := dir.Interrupt.RequestedAt.Sub(mgr.Interrupt.RequestedAt); got != escalateAfter {
				t.Errorf("the director was asked %v after the manager, want %v", got, escalateAfter)
			}
			w, gone := res.Snapshot.WithdrawnAs(mgr.ID)
			if !gone || w.Reason != signals.WithdrawnExpired || len(res.Snapshot.Resolved) != 1 ||
				res.Snapshot.Resolved[0].InterruptID != dir.ID {
				t.Fatalf("withdrawn %+v, resolved %+v: want the manager's question expired, only the director's resolved",
					res.Snapshot.Withdrawn, res.Snapshot.Resolved)
			}
			if mgr.Answer != nil {
				t.Errorf("the manager's question has an accepted answer %+v", *mgr.Answer)
			}
			if tt.approved && (len(mgr.Refusals) != 1 || !errors.Is(mgr.Refusals[0], workflows.ErrExpired)) {
				t.Errorf("refusals of the late answer = %v, want one wrapping ErrExpired", mgr.Refusals)
			}
		})
	}
}

// TestApproveExpenseCancelled: a cancellation before the deadline, after
// the escalation, or while the expense is booked ends the run cancelled
// (no question left open, nothing booked past it).
func TestApproveExpenseCancelled(t *testing.T) {
	tests := []struct {
		name  string
		setup func(env *workflowstest.Env)
		asked []string // the questions asked
	}{
		{"before the deadline", func(env *workflowstest.Env) {
			env.At(escalateAfter/2, func() { env.Cancel("") })
		}, []string{"manager"}},
		{"after the escalation", func(env *workflowstest.Env) {
			env.At(escalateAfter+time.Minute, func() { env.Cancel("") })
		}, []string{"manager", "director"}},
		{"while booking", func(env *workflowstest.Env) {
			env.Answer("manager", workflowstest.Choose("accept").As(maria))
			var once sync.Once
			// Cancel at the booking's first heartbeat.
			env.Temporal().SetOnActivityHeartbeatListener(func(info *activity.Info, details converter.EncodedValues) {
				var p activities.Progress
				if info.ActivityType.Name == "BookExpense" && details.Get(&p) == nil && p.Step == "book" {
					once.Do(func() { env.Cancel("") })
				}
			})
		}, []string{"manager"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			tt.setup(env)
			res, err := env.Call("approve_expense", expenseArgs())
			if err != nil {
				t.Fatal(err)
			}
			if res.Status() != signals.StatusCancelled || len(res.Snapshot.Interrupts) != 0 {
				t.Fatalf("status %s, open %+v: want cancelled with no question open", res.Status(), res.Snapshot.Interrupts)
			}
			var asked []string
			for _, q := range res.Questions {
				asked = append(asked, q.Key)
			}
			if len(asked) != len(tt.asked) || asked[len(asked)-1] != tt.asked[len(tt.asked)-1] {
				t.Errorf("asked %v, want %v", asked, tt.asked)
			}
			if tt.name == "while booking" {
				if m := res.Snapshot.StatusMessage; !strings.Contains(m, "step book") || strings.Contains(m, "4/4") {
					t.Errorf("cancelled with the message %q, want within the booking", m)
				}
			}
		})
	}
}
