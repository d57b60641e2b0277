package testenv_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
)

// greet waits for a "name" signal and greets it.
func greet(ctx workflow.Context) (string, error) {
	var name string
	workflow.GetSignalChannel(ctx, "name").Receive(ctx, &name)
	return "hello " + name, nil
}

func registerGreet(r worker.Registry) { r.RegisterWorkflow(greet) }

func runGreet(ctx context.Context, t *testing.T, c client.Client, tq, id string) client.WorkflowRun {
	t.Helper()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: tq}, greet)
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	return run
}

func TestSharedServerRunsWorkflows(t *testing.T) {
	env := testenv.Temporal(t)
	if again := testenv.Temporal(t); again != env {
		t.Fatal("Temporal returned a second server")
	}
	tq := testenv.UniqueTaskQueue(t)
	if !strings.Contains(tq, "TestSharedServerRunsWorkflows") || tq == testenv.UniqueTaskQueue(t) {
		t.Fatalf("UniqueTaskQueue = %q: want the test name and a fresh suffix", tq)
	}
	env.NewWorker(t, tq, registerGreet)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := testenv.UniqueID("acme/greet-")
	run := runGreet(ctx, t, env.Client, tq, id)
	if err := env.Client.SignalWorkflow(ctx, id, "", "name", "ada"); err != nil {
		t.Fatalf("signal: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello ada" {
		t.Fatalf("result = %q, %v; want hello ada", got, err)
	}
}

func TestServerRestartKeepsRuns(t *testing.T) {
	srv := testenv.StartServer(t, filepath.Join(t.TempDir(), "temporal.db"))
	tq := testenv.UniqueTaskQueue(t)
	srv.NewWorker(t, tq, registerGreet)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runGreet(ctx, t, srv.Client, tq, "acme/restart")

	before := srv.Address
	srv.Restart(t)
	if srv.Address == before {
		t.Logf("restarted on the same address %s", before)
	}
	desc, err := srv.Client.DescribeWorkflowExecution(ctx, "acme/restart", "")
	if err != nil {
		t.Fatalf("describe after restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("status after restart = %v, want running", st)
	}
	srv.NewWorker(t, tq, registerGreet)
	if err := srv.Client.SignalWorkflow(ctx, "acme/restart", "", "name", "bob"); err != nil {
		t.Fatalf("signal: %v", err)
	}
	var got string
	if err := srv.Client.GetWorkflow(ctx, "acme/restart", "").Get(ctx, &got); err != nil || got != "hello bob" {
		t.Fatalf("result = %q, %v; want hello bob", got, err)
	}
}
