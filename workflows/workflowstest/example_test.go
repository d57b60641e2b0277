package workflowstest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// Refund is the tool of the examples: it asks for an approval.
func Refund(ctx workflow.Context, in struct {
	OrderID string `json:"orderId"`
}) (map[string]any, error) {
	d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "approve-refund", Title: "Refund " + in.OrderID + "?"})
	return map[string]any{"refunded": d.Approved}, err
}

// A test calls the tool, answers its approval as an agent does and reads
// the result.
func ExampleEnv_Call() {
	reg, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("refund", "Refund an order after approval.", Refund, workflows.Suspends()),
	})
	if err != nil {
		panic(err)
	}
	env := workflowstest.New(reg)
	env.Answer("approve-refund", workflowstest.Choose("accept"))
	res, err := env.Call("refund", map[string]string{"orderId": "A-17"})
	if err != nil {
		panic(err)
	}
	var out struct {
		Refunded bool `json:"refunded"`
	}
	if err := res.Output(&out); err != nil {
		panic(err)
	}
	q := res.Questions[0]
	fmt.Println(q.ID, q.Message)
	fmt.Println(string(q.RequestedSchema))
	fmt.Println(res.Status(), out.Refunded, res.EventTypes())
	// Output:
	// test/workflowstest-run-1-i1 Refund A-17?
	// {"properties":{"action":{"enum":["accept","reject"],"type":"string"}},"required":["action"],"type":"object"}
	// completed true [run.started node.suspended interrupt.requested interrupt.resolved run.completed]
}

// An AnswerFunc sees the question and answers it; when its answer is
// refused it is asked again with the refusal, as an agent corrects itself.
func ExampleEnv_AnswerFunc() {
	reg, _ := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("refund", "Refund an order after approval.", Refund, workflows.Suspends()),
	})
	env := workflowstest.New(reg)
	env.AnswerFunc("approve-refund", func(q workflowstest.Question) workflowstest.Answer {
		if len(q.Refusals) == 0 {
			return workflowstest.Choose("maybe") // not offered
		}
		return workflowstest.Choose("reject")
	})
	res, err := env.Call("refund", map[string]string{"orderId": "A-18"})
	if err != nil {
		panic(err)
	}
	q, _ := res.Question("approve-refund")
	fmt.Println(len(q.Refusals), string(res.Snapshot.Outputs))
	// Output:
	// 1 {"refunded":false}
}

// A test replays the histories recorded of a tool's runs with the
// current code: the replay of a history fails when a change would fail
// the runs in flight.
func ExampleReplayAll() {
	_ = func(t *testing.T, reg *workflows.Registry) {
		replayed := workflowstest.ReplayAll(t, reg, filepath.Join("testdata", "histories"))
		for _, spec := range reg.Specs() {
			if !replayed[spec.Name] {
				t.Errorf("no recorded history of tool %s", spec.Name)
			}
		}
	}
}

// Before deploying a new build of the refund tool, replay the runs in
// flight with its code: the runs it would break are listed (those pinned
// to an older version finish there, and do not break).
func ExampleReplayOpen() {
	_ = func(ctx context.Context, c client.Client, next *workflows.Registry) error {
		runs, err := workflowstest.ReplayOpen(ctx, c, next, "TaskQueue = 'refunds'")
		if err != nil {
			return err
		}
		for _, r := range runs {
			if r.Breaks("refunds.2026-12-06.1") {
				fmt.Printf("run %s (%s, version %q) would fail: %v\n", r.WorkflowID, r.Tool, r.Version, r.Err)
			}
		}
		return nil
	}
}
