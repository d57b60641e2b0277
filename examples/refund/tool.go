package main

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/workflows"
)

// RefundInput is what the agent passes to the refund tool. The tool's input
// schema is derived from it: fields without omitempty are required, and the
// jsonschema tags describe them.
type RefundInput struct {
	OrderID     string `json:"orderId" jsonschema:"the order to refund"`
	AmountCents int64  `json:"amountCents" jsonschema:"amount to refund, in cents"`
	Reason      string `json:"reason,omitempty" jsonschema:"why the customer wants a refund"`
}

// RefundOutput is the tool's result (its structured content).
type RefundOutput struct {
	OrderID  string `json:"orderId"`
	Refunded bool   `json:"refunded"`
	RefundID string `json:"refundId,omitempty"`
	Decision string `json:"decision"`
}

// Refund asks a human to approve the refund, then issues it in an
// activity. A rejection completes the run with refunded=false.
func Refund(ctx workflow.Context, in RefundInput) (RefundOutput, error) {
	out := RefundOutput{OrderID: in.OrderID}
	d, err := workflows.Approve(ctx, workflows.ApprovalRequest{
		Key:   "approve-refund",
		Title: fmt.Sprintf("Refund %d.%02d for order %s?", in.AmountCents/100, in.AmountCents%100, in.OrderID),
	})
	if err != nil {
		return out, err
	}
	out.Decision = d.Action
	if !d.Approved {
		return out, nil
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	err = workflow.ExecuteActivity(ctx, IssueRefund, in).Get(ctx, &out.RefundID)
	out.Refunded = err == nil
	return out, err
}

// IssueRefund is the side effect (here a made-up id); it reports its progress.
func IssueRefund(ctx context.Context, in RefundInput) (string, error) {
	return "rf-" + in.OrderID, activities.ReportProgress(ctx, activities.Progress{Done: 1, Total: 1, Step: "refund"})
}
