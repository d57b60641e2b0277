package workflowstest_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// countTwice counts 1 of 2 and, a minute later, 2 of 2 in its step
// "count", waiting a minute after each, then works in the step "wrap"
// without counts.
func countTwice(ctx workflow.Context, _ struct{}) (orderOut, error) {
	_, err := workflows.Step(ctx, "count", func(ctx workflow.Context) (struct{}, error) {
		if err := workflows.ReportProgress(ctx, 1, 2); err != nil {
			return struct{}{}, err
		}
		if err := workflow.Sleep(ctx, time.Minute); err != nil {
			return struct{}{}, err
		}
		if err := workflows.ReportProgress(ctx, 2, 2); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, workflow.Sleep(ctx, time.Minute)
	})
	if err != nil {
		return orderOut{}, err
	}
	_, err = workflows.Step(ctx, "wrap", func(ctx workflow.Context) (struct{}, error) {
		return struct{}{}, workflow.Sleep(ctx, time.Minute)
	})
	return orderOut{Decision: "done"}, err
}

// TestResultProgress: Result.Progress holds the progress the run
// reported, in order, as an agent following the task sees it.
func TestResultProgress(t *testing.T) {
	reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("count_twice", "Counts to two.", countTwice)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := workflowstest.New(reg).Call("count_twice", struct{}{})
	if err != nil || res.Status() != signals.StatusCompleted {
		t.Fatalf("Call = %v, %v", res, err)
	}
	want := []signals.Progress{{Step: "count", Done: 1, Total: 2}, {Step: "count", Done: 2, Total: 2}, {Step: "wrap"}}
	if !reflect.DeepEqual(res.Progress, want) {
		t.Fatalf("Progress = %+v, want %+v", res.Progress, want)
	}
}

// TestRefusalIsTheServers: a refused answer is refused as the server
// refuses it (answers.Check), naming the rule.
func TestRefusalIsTheServers(t *testing.T) {
	env := workflowstest.New(registry(t))
	env.Answer("approve", workflowstest.Choose("accept"))
	scripted := []workflowstest.Answer{workflowstest.Accept(map[string]any{"note": "x", "pages": "two"}),
		workflowstest.Accept(noteAnswer{Note: "x", Pages: 2})}
	env.AnswerFunc("note", func(q workflowstest.Question) workflowstest.Answer { return scripted[len(q.Refusals)] })
	res, err := env.Call("ship", orderIn{OrderID: "A-3"})
	if err != nil || res.Status() != signals.StatusCompleted {
		t.Fatalf("Call = %v, %v", res, err)
	}
	q, _ := res.Question("note")
	var ae *answers.Error
	if len(q.Refusals) != 1 || !errors.As(q.Refusals[0], &ae) || ae.InterruptID != q.ID {
		t.Fatalf("refusals = %v, want one *answers.Error for %s", q.Refusals, q.ID)
	}
}
