package main

import (
	"testing"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// The tests call the tool in the Temporal SDK's test environment with the
// test kit, answering its approval as an agent would, and read what the run
// reported of its progress.

func TestRefund(t *testing.T) {
	reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("refund", "Refund an order.", Refund, workflows.Suspends())}, IssueRefund)
	if err != nil {
		t.Fatal(err)
	}
	env := workflowstest.New(reg)
	env.Answer("approve-refund", workflowstest.Choose("accept"))
	res, err := env.Call("refund", RefundInput{OrderID: "A-17", AmountCents: 1250})
	var out RefundOutput
	if err == nil {
		err = res.Output(&out)
	}
	if p := res.Progress; len(p) == 0 || p[len(p)-1] != (signals.Progress{Step: "refund", Done: 1, Total: 1}) {
		t.Errorf("progress the run reported: %+v, want IssueRefund's", p)
	}
	if err != nil || !out.Refunded || out.RefundID != "rf-A-17" {
		t.Fatalf("output %+v, error %v", out, err)
	}
	if q := res.Questions[0]; q.Message != "Refund 12.50 for order A-17?" {
		t.Errorf("the agent was asked %q", q.Message)
	}
}

// TestRefundAnswers: a rejection refunds nothing, and an answer the
// approval does not offer is refused, as the server refuses it.
func TestRefundAnswers(t *testing.T) {
	tests := []struct {
		answer   workflowstest.Answer
		refunded bool
		refused  bool
	}{
		{answer: workflowstest.Choose("reject")},
		{answer: workflowstest.Decline()},
		{answer: workflowstest.Choose("maybe"), refused: true},
	}
	for _, tc := range tests {
		reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("refund", "Refund an order.", Refund, workflows.Suspends())}, IssueRefund)
		if err != nil {
			t.Fatal(err)
		}
		env := workflowstest.New(reg)
		env.Answer("approve-refund", tc.answer)
		res, err := env.Call("refund", RefundInput{OrderID: "A-18", AmountCents: 99})
		if tc.refused {
			if err == nil || res.Status() != "cancelled" || len(res.Questions[0].Refusals) != 1 {
				t.Errorf("%+v: error %v, result %+v; want the answer refused", tc.answer, err, res)
			}
			continue
		}
		var out RefundOutput
		if err == nil {
			err = res.Output(&out)
		}
		if err != nil || out.Refunded || out.Decision != "reject" {
			t.Errorf("%+v: output %+v, error %v", tc.answer, out, err)
		}
	}
}
