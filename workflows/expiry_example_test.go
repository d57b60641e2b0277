package workflows_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// ExpenseInput is the input of the escalation example.
type ExpenseInput struct {
	Amount float64 `json:"amount" jsonschema:"amount of the expense"`
}

// ApproveWithEscalation asks a manager; when no manager answers within an
// hour, the manager's question is withdrawn and a director is asked
// instead: the first answer to the open question decides.
func ApproveWithEscalation(ctx workflow.Context, in ExpenseInput) (string, error) {
	title := fmt.Sprintf("Approve an expense of %.2f?", in.Amount)
	d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "manager", Title: title,
		Approvers: []string{"group:managers"}, Timeout: time.Hour})
	if errors.Is(err, workflows.ErrExpired) {
		d, err = workflows.Approve(ctx, workflows.ApprovalRequest{Key: "director", Title: title,
			Approvers: []string{"group:directors"}})
	}
	if err != nil {
		return "", err
	}
	return d.Action + " by " + d.By.SubjectID, nil
}

// A question with a deadline (Timeout) ends by itself: unanswered, it is
// withdrawn and the ask returns ErrExpired. The test kit skips the hour
// in virtual time; a manager's answer after it is refused and reaches
// nothing.
func ExampleApprove_escalation() {
	reg, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("approve_expense", "Approve an expense.", ApproveWithEscalation, workflows.Suspends()),
	})
	if err != nil {
		log.Fatalln(err)
	}
	env := workflowstest.New(reg)
	manager := signals.Subject{Issuer: "example", SubjectID: "maria", Tenant: workflowstest.DefaultTenant, Groups: []string{"managers"}}
	director := signals.Subject{Issuer: "example", SubjectID: "dora", Tenant: workflowstest.DefaultTenant, Groups: []string{"directors"}}
	env.AnswerAt(61*time.Minute, "manager", workflowstest.Choose("accept").As(manager))
	env.AnswerAt(62*time.Minute, "director", workflowstest.Choose("reject").As(director))
	res, err := env.Call("approve_expense", ExpenseInput{Amount: 120.5})
	if err != nil {
		log.Fatalln(err)
	}
	var out struct {
		Result string `json:"result"`
	}
	if err := res.Output(&out); err != nil {
		log.Fatalln(err)
	}
	q, _ := res.Question("manager")
	fmt.Println(out.Result)
	fmt.Println("the manager's answer:", errors.Is(q.Refusals[0], workflows.ErrExpired))
	// Output:
	// reject by dora
	// the manager's answer: true
}
