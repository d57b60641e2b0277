package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// TestStartOnToolTaskQueue: a run starts on its spec's task queue, as its
// spec's workflow type, and keeps the tool's name as its workflowId; the
// service's own task queue is only the fallback of specs that name none.
func TestStartOnToolTaskQueue(t *testing.T) {
	env := testenv.Temporal(t)
	toolQueue := testenv.UniqueTaskQueue(t)
	var delay signals.ToolSpec
	env.NewWorker(t, toolQueue, func(r worker.Registry) {
		for _, tl := range conformancetools.Tools() {
			if tl.Spec().Name == "conformance-delay" {
				delay = tl.Spec()
				r.RegisterWorkflowWithOptions(tl.Workflow(), workflow.RegisterOptions{Name: "custom-delay-type"})
			}
		}
	})
	// Nothing polls the service's own task queue.
	s := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: testenv.UniqueTaskQueue(t) + "-idle", Namespace: env.Namespace})
	ctx := ctxT(t)
	delay.TaskQueue, delay.WorkflowType = toolQueue, "custom-delay-type"
	snap, err := s.Start(ctx, runs.NewRun{Tool: delay, Arguments: json.RawMessage(`{"delayMs":10}`), Caller: alice, Transport: signals.TransportREST})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Tool != "conformance-delay" || (snap.Status.Terminal() && snap.Status != signals.StatusCompleted) {
		t.Fatalf("start = %+v", snap)
	}
	done, err := s.Await(ctx, alice, snap.RunID, terminal)
	if err != nil || done.Status != signals.StatusCompleted || done.Tool != "conformance-delay" || string(done.Outputs) != `{"delayedMs":10}` {
		t.Fatalf("Await = %+v, %v", done, err)
	}
	d, err := env.Client.DescribeWorkflowExecution(ctx, snap.RunID, "")
	if err != nil {
		t.Fatal(err)
	}
	if info := d.GetWorkflowExecutionInfo(); info.GetTaskQueue() != toolQueue || info.GetType().GetName() != "custom-delay-type" {
		t.Fatalf("run on task queue %q as type %q", info.GetTaskQueue(), info.GetType().GetName())
	}
}

// Workflows of the plain contract: any workflow, the arguments object as
// its input, any JSON value as its result.

func plainEcho(_ workflow.Context, args map[string]any) (map[string]any, error) {
	return map[string]any{"echo": args["msg"]}, nil
}

func plainGreet(_ workflow.Context, args map[string]any) (string, error) {
	name, _ := args["name"].(string)
	return "hello " + name, nil
}

func plainFail(workflow.Context, map[string]any) (string, error) {
	return "", temporal.NewNonRetryableApplicationError("it broke", "Boom", nil)
}

func plainWait(ctx workflow.Context, _ map[string]any) (string, error) {
	return "", workflow.Sleep(ctx, time.Hour)
}

// TestPlainContract: runs of a plain workflow are projected from what
// Temporal knows: running while open, then completed with the result as
// text and structured content, failed with the failure's message, or
// cancelled.
func TestPlainContract(t *testing.T) {
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	env.NewWorker(t, tq, func(r worker.Registry) {
		r.RegisterWorkflowWithOptions(plainEcho, workflow.RegisterOptions{Name: "PlainEcho"})
		r.RegisterWorkflowWithOptions(plainGreet, workflow.RegisterOptions{Name: "PlainGreet"})
		r.RegisterWorkflowWithOptions(plainFail, workflow.RegisterOptions{Name: "PlainFail"})
		r.RegisterWorkflowWithOptions(plainWait, workflow.RegisterOptions{Name: "PlainWait"})
	})
	s := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: testenv.UniqueTaskQueue(t) + "-idle", Namespace: env.Namespace})
	spec := func(name, typ string) signals.ToolSpec {
		return signals.ToolSpec{Name: name, Description: name, TaskQueue: tq, WorkflowType: typ, Contract: signals.ContractPlain}
	}
	startPlain := func(t *testing.T, ctx context.Context, tool signals.ToolSpec, args string) signals.Snapshot {
		t.Helper()
		snap, err := s.Start(ctx, runs.NewRun{Tool: tool, Arguments: json.RawMessage(args), Caller: alice, Transport: signals.TransportMCP})
		if err != nil {
			t.Fatal(err)
		}
		if snap.Status != signals.StatusRunning || snap.Tool != tool.Name || snap.Owner.Subject.SubjectID != alice.SubjectID {
			t.Fatalf("start = %+v", snap)
		}
		return snap
	}

	t.Run("object result", func(t *testing.T) {
		ctx := ctxT(t)
		snap := startPlain(t, ctx, spec("echo", "PlainEcho"), `{"msg":"hi"}`)
		done, err := s.Await(ctx, alice, snap.RunID, terminal)
		if err != nil || done.Status != signals.StatusCompleted || done.Tool != "echo" || done.Result == nil || done.Result.IsError {
			t.Fatalf("Await = %+v, %v", done, err)
		}
		if string(done.Outputs) != `{"echo":"hi"}` || string(done.Result.StructuredContent) != `{"echo":"hi"}` ||
			len(done.Result.Content) != 1 || done.Result.Content[0].Text != `{"echo":"hi"}` {
			t.Fatalf("result = %+v, outputs %s", done.Result, done.Outputs)
		}
		if _, err := s.Get(ctx, mallory, snap.RunID); !errors.Is(err, runs.ErrTenantMismatch) {
			t.Fatalf("Get by another tenant: %v", err)
		}
	})

	t.Run("string result", func(t *testing.T) {
		ctx := ctxT(t)
		snap := startPlain(t, ctx, spec("greet-plain", "PlainGreet"), `{"name":"Ada"}`)
		done, err := s.Await(ctx, alice, snap.RunID, terminal)
		if err != nil || done.Status != signals.StatusCompleted || done.Result == nil || done.Result.Content[0].Text != "hello Ada" ||
			string(done.Outputs) != `{"result":"hello Ada"}` {
			t.Fatalf("Await = %+v, %v", done, err)
		}
	})

	t.Run("failure", func(t *testing.T) {
		ctx := ctxT(t)
		snap := startPlain(t, ctx, spec("fail-plain", "PlainFail"), `{}`)
		done, err := s.Await(ctx, alice, snap.RunID, terminal)
		if err != nil || done.Status != signals.StatusFailed || done.Error == nil || !strings.Contains(done.Error.Message, "it broke") ||
			done.Result == nil || !done.Result.IsError {
			t.Fatalf("Await = %+v, %v", done, err)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		ctx := ctxT(t)
		snap := startPlain(t, ctx, spec("wait-plain", "PlainWait"), `{}`)
		if got, err := s.Get(ctx, alice, snap.RunID); err != nil || got.Status != signals.StatusRunning {
			t.Fatalf("Get = %+v, %v", got, err)
		}
		after, err := s.Cancel(ctx, alice, snap.RunID, signals.ReasonCallerRequested)
		if err != nil || after.Status != signals.StatusCancelling || after.CancelReason != signals.ReasonCallerRequested {
			t.Fatalf("Cancel = %+v, %v", after, err)
		}
		done, err := s.Await(ctx, alice, snap.RunID, terminal)
		if err != nil || done.Status != signals.StatusCancelled || done.CancelReason != signals.ReasonCallerRequested {
			t.Fatalf("Await = %+v, %v", done, err)
		}
		if _, err := s.Cancel(ctx, alice, snap.RunID, ""); !errors.Is(err, runs.ErrTerminal) {
			t.Fatalf("cancel of a terminal run: %v, want ErrTerminal", err)
		}
		if page, cur, err := s.Events(ctx, alice, snap.RunID, -1, 0); err != nil || len(page.Events) != 0 || cur.Status != signals.StatusCancelled {
			t.Fatalf("Events = %+v %s, %v", page, cur.Status, err)
		}
	})
}
