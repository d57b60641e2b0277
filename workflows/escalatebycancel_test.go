package workflows_test

import (
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// escalateByCancelTool escalates by cancelling the first ask's context
// after two seconds, then asks again: the history
// testdata/escalate_by_cancel.old.json was recorded with the harness
// before questions were withdrawn (the first question stayed open, and a
// late answer to it was applied). Do not change it: the recorded history
// replays against it.
func escalateByCancelTool() workflows.Tool {
	return workflows.NewTool("escalate_by_cancel", "Escalate by cancelling the ask.", func(ctx workflow.Context, _ noInput) (map[string]any, error) {
		actx, cancel := workflow.WithCancel(ctx)
		workflow.Go(ctx, func(c workflow.Context) {
			if workflow.Sleep(c, 2*time.Second) == nil {
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

// TestReplayOldCancelledAsk: a run recorded before questions were
// withdrawn, whose first ask's context was cancelled (its question stayed
// open, and a late answer to it was applied), replays with the current
// harness: the withdrawal is guarded by openwop-withdraw-question.
func TestReplayOldCancelledAsk(t *testing.T) {
	reg, err := workflows.NewRegistry([]workflows.Tool{escalateByCancelTool()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workflowstest.Replay(reg, "testdata/escalate_by_cancel.old.json"); err != nil {
		t.Fatal(err)
	}
}
