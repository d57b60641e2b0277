package runs_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// chargeCard is an activity that fails for good, as a payment provider's
// refusal does.
func chargeCard(context.Context, map[string]any) (string, error) {
	return "", temporal.NewNonRetryableApplicationError("card declined: insufficient funds", "CardDeclined", nil)
}

// plainCharge is a plain workflow whose activity fails: its failure is
// "Activity task failed", caused by the activity's application error.
func plainCharge(ctx workflow.Context, args map[string]any) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var id string
	err := workflow.ExecuteActivity(ctx, "chargeCard", args).Get(ctx, &id)
	return id, err
}

// waitLong is an openwop tool that waits an hour.
func waitLong(ctx workflow.Context, _ struct{}) (string, error) {
	return "done", workflow.Sleep(ctx, time.Hour)
}

// TestPlainFailureShowsRootCause: a plain run whose activity failed reads
// failed with the activity's message, not the wrapper's "Activity task
// failed", both when followed to its end (Await) and when read later (Get).
func TestPlainFailureShowsRootCause(t *testing.T) {
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	env.NewWorker(t, tq, func(r worker.Registry) {
		r.RegisterWorkflowWithOptions(plainCharge, workflow.RegisterOptions{Name: "PlainCharge"})
		r.RegisterActivityWithOptions(chargeCard, activity.RegisterOptions{Name: "chargeCard"})
	})
	s := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
	ctx := ctxT(t)
	tool := signals.ToolSpec{Name: "charge", Description: "charge", TaskQueue: tq, WorkflowType: "PlainCharge", Contract: signals.ContractPlain}
	snap, err := s.Start(ctx, runs.NewRun{Tool: tool, Arguments: json.RawMessage(`{}`), Caller: alice, Transport: signals.TransportMCP})
	if err != nil {
		t.Fatal(err)
	}
	const want = "card declined: insufficient funds"
	done, err := s.Await(ctx, alice, snap.RunID, terminal)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, alice, snap.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]signals.Snapshot{"Await": done, "Get": got} {
		if r.Status != signals.StatusFailed || r.Error == nil || r.Error.Code != "workflow_failed" || r.Error.Message != want ||
			r.Result == nil || !r.Result.IsError || r.Result.Content[0].Text != want {
			t.Errorf("%s = %+v (error %+v), want failed with %q", name, r, r.Error, want)
		}
	}
}

// TestRunTimeout: a tool's run timeout bounds its runs, of either
// contract: a run still open when it expires reads failed with the code
// workflow_timed_out and a message naming the timeout.
func TestRunTimeout(t *testing.T) {
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	const timeout = 2 * time.Second
	reg, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("wait_long", "Waits an hour.", waitLong, workflows.WithRunTimeout(timeout)),
	})
	if err != nil {
		t.Fatal(err)
	}
	env.NewWorker(t, tq, func(r worker.Registry) {
		reg.Register(r)
		r.RegisterWorkflowWithOptions(plainWait, workflow.RegisterOptions{Name: "PlainWait"})
	})
	s := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
	openwop, _ := reg.Lookup("wait_long")
	plain := signals.ToolSpec{Name: "wait-plain", Description: "waits", TaskQueue: tq, WorkflowType: "PlainWait",
		Contract: signals.ContractPlain, RunTimeout: signals.Duration(timeout)}
	for _, tool := range []signals.ToolSpec{openwop, plain} {
		t.Run(tool.Name, func(t *testing.T) {
			ctx := ctxT(t)
			snap, err := s.Start(ctx, runs.NewRun{Tool: tool, Arguments: json.RawMessage(`{}`), Caller: alice, Transport: signals.TransportMCP})
			if err != nil {
				t.Fatal(err)
			}
			d, err := env.Client.DescribeWorkflowExecution(ctx, snap.RunID, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := d.GetExecutionConfig().GetWorkflowExecutionTimeout().AsDuration(); got != timeout {
				t.Fatalf("workflow execution timeout = %s, want %s", got, timeout)
			}
			done, err := s.Await(ctx, alice, snap.RunID, terminal)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, alice, snap.RunID)
			if err != nil {
				t.Fatal(err)
			}
			for name, r := range map[string]signals.Snapshot{"Await": done, "Get": got} {
				if r.Status != signals.StatusFailed || r.Error == nil || r.Error.Code != runs.CodeTimedOut ||
					!strings.Contains(r.Error.Message, "run timeout of 2s") || r.Result == nil || !r.Result.IsError {
					t.Errorf("%s = %s, error %+v; want failed, %s naming the 2s run timeout", name, r.Status, r.Error, runs.CodeTimedOut)
				}
				if !r.CreatedAt.Equal(snap.CreatedAt) {
					t.Errorf("%s: createdAt %s, Start said %s", name, r.CreatedAt, snap.CreatedAt)
				}
			}
		})
	}
}
