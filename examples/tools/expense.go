package tools

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/workflows"
)

// The approvers approve_expense asks when its arguments name none.
const (
	DefaultManagers  = "group:managers"
	DefaultDirectors = "group:directors"
)

// ApproveExpenseInput is the input of approve_expense.
type ApproveExpenseInput struct {
	Amount  float64 `json:"amount" jsonschema:"amount of the expense"`
	Purpose string  `json:"purpose" jsonschema:"what the expense is for"`
	// EscalateAfterSeconds is how long the managers have to answer.
	EscalateAfterSeconds int `json:"escalateAfterSeconds,omitempty" jsonschema:"seconds the managers have to answer before a director is asked instead (default 86400)"`
	// Managers and Directors, when set, replace DefaultManagers and
	// DefaultDirectors.
	Managers  []string `json:"managers,omitempty" jsonschema:"principals asked first (default group:managers)"`
	Directors []string `json:"directors,omitempty" jsonschema:"principals asked after the deadline (default group:directors)"`
}

// ApproveExpenseOutput is the output of approve_expense.
type ApproveExpenseOutput struct {
	ExpenseID string `json:"expenseId"`
	Approved  bool   `json:"approved"`
	// Decision is the chosen action (accept or reject).
	Decision string `json:"decision"`
	// DecidedBy is the subject whose answer decided.
	DecidedBy string `json:"decidedBy"`
	// Escalated is set when the managers did not answer in time and a
	// director decided.
	Escalated bool `json:"escalated"`
	// BookingRef is the ledger's reference of the booked expense.
	BookingRef string `json:"bookingRef,omitempty"`
}

// ResultText implements ResultTexter.
func (o ApproveExpenseOutput) ResultText() string {
	if !o.Approved {
		return fmt.Sprintf("Expense %s was not approved: %s chose %q.", o.ExpenseID, o.DecidedBy, o.Decision)
	}
	return fmt.Sprintf("Expense %s approved by %s and booked as %s.", o.ExpenseID, o.DecidedBy, o.BookingRef)
}

// ApproveExpense asks a manager to approve an expense and, when no manager
// answers within the deadline, a director instead: the manager's question
// is then withdrawn, so a late answer to it resolves nothing, and the
// director's answer decides. An approved expense is booked by BookExpense,
// which reports its progress.
func ApproveExpense(ctx workflow.Context, in ApproveExpenseInput) (ApproveExpenseOutput, error) {
	var acts *Activities // names the activity; the receiver is never used
	info := workflow.GetInfo(ctx)
	out := ApproveExpenseOutput{ExpenseID: expenseID(info.WorkflowExecution.ID)}
	title := fmt.Sprintf("Approve an expense of %.2f for %s?", in.Amount, in.Purpose)
	managers, directors := in.Managers, in.Directors
	if len(managers) == 0 {
		managers = []string{DefaultManagers}
	}
	if len(directors) == 0 {
		directors = []string{DefaultDirectors}
	}
	deadline := time.Duration(cmp.Or(in.EscalateAfterSeconds, 86400)) * time.Second

	d, err := workflows.Approve(ctx, workflows.ApprovalRequest{
		Key: "manager", Title: title, Approvers: managers, Timeout: deadline})
	if out.Escalated = errors.Is(err, workflows.ErrExpired); out.Escalated {
		d, err = workflows.Approve(ctx, workflows.ApprovalRequest{
			Key: "director", Title: title, Approvers: directors})
	}
	if err != nil {
		return out, err
	}

	out.Decision, out.Approved, out.DecidedBy = d.Action, d.Approved, d.By.SubjectID
	if !d.Approved {
		return out, nil
	}
	out.BookingRef, err = workflows.Step(ctx, "book", func(ctx workflow.Context) (string, error) {
		// BookExpense heartbeats: a heartbeat timeout makes the SDK send
		// them every few seconds, so a cancellation reaches it soon.
		opts := workflow.GetActivityOptions(ctx)
		opts.HeartbeatTimeout = 3 * time.Second
		ctx = workflow.WithActivityOptions(ctx, opts)
		var ref string
		err := workflow.ExecuteActivity(ctx, acts.BookExpense, Expense{ID: out.ExpenseID, Amount: in.Amount, Purpose: in.Purpose}).Get(ctx, &ref)
		return ref, err
	})
	return out, err
}

// expenseID is the id of the expense of run runID.
func expenseID(runID string) string {
	sum := sha256.Sum256([]byte(runID))
	return "exp-" + hex.EncodeToString(sum[:6])
}

// Expense is the input of BookExpense.
type Expense struct {
	ID      string  `json:"id"`
	Amount  float64 `json:"amount"`
	Purpose string  `json:"purpose"`
}

// bookingStages is how many stages BookExpense reports.
const bookingStages = 4

// BookExpense books an approved expense in bookingStages stages of
// BookingDelay each, reporting its progress (step book, done/total) to
// the run after each, and returns the booking's reference. It stops as
// soon as it is cancelled; a retried attempt resumes after the last stage
// it reported, and books the same reference.
func (a *Activities) BookExpense(ctx context.Context, e Expense) (string, error) {
	start := int64(0)
	if p, ok := activities.LastProgress(ctx); ok {
		start = p.Done
	}
	for done := start + 1; done <= bookingStages; done++ {
		if err := a.work(ctx, a.opts.BookingDelay, func(time.Duration) any {
			return activities.Progress{Done: done - 1, Total: bookingStages, Step: "book"}
		}); err != nil {
			return "", err
		}
		if err := activities.ReportProgress(ctx, activities.Progress{Done: done, Total: bookingStages, Step: "book"}); err != nil {
			return "", err
		}
	}
	ref := "ledger-" + e.ID
	a.logger.Info("expense booked", append(runFields(ctx), zap.String("ref", ref),
		zap.String("activity", activity.GetInfo(ctx).ActivityType.Name))...)
	return ref, nil
}

// compile-time check: approve_expense has its own result text.
var _ workflows.ResultTexter = ApproveExpenseOutput{}
