package workflows_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

func tracedActivity(context.Context) (string, error) { return "done", nil }

func tracedTool(ctx workflow.Context, _ noInput) (string, error) {
	var out string
	err := workflow.ExecuteActivity(ctx, tracedActivity).Get(ctx, &out)
	return out, err
}

// TestWorkerTracerProvider: Registry.Run with WorkerOptions.TracerProvider
// traces a worker whose client has no interceptor: the workflow is a span,
// its activity a span below it.
func TestWorkerTracerProvider(t *testing.T) {
	env := testenv.Temporal(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("traced_tool", "runs one activity", tracedTool)}, tracedActivity)
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- reg.Run(runCtx, env.Client, tq, workflows.WorkerOptions{TracerProvider: tp}) }()
	defer func() { stop(); <-done }()

	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: testenv.UniqueID("acme/traced-"), TaskQueue: tq},
		"traced_tool", signals.StartRequest{Owner: signals.Owner{Tenant: "acme"}, Transport: signals.TransportMCP})
	if err != nil {
		t.Fatal(err)
	}
	var rec signals.RunRecord
	if err := run.Get(ctx, &rec); err != nil || rec.Snapshot.Status != signals.StatusCompleted {
		t.Fatalf("run = %+v, %v", rec.Snapshot.Status, err)
	}
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		byName[s.Name] = s
	}
	wf, okW := byName["RunWorkflow:traced_tool"]
	start, okS := byName["StartActivity:tracedActivity"]
	act, okA := byName["RunActivity:tracedActivity"]
	if !okW || !okS || !okA {
		t.Fatalf("spans %v: want RunWorkflow, StartActivity and RunActivity", keys(byName))
	}
	if start.Parent.SpanID() != wf.SpanContext.SpanID() || act.Parent.SpanID() != start.SpanContext.SpanID() ||
		act.SpanContext.TraceID() != wf.SpanContext.TraceID() {
		t.Fatalf("parents: StartActivity %s, RunActivity %s; want RunWorkflow %s, StartActivity %s",
			start.Parent.SpanID(), act.Parent.SpanID(), wf.SpanContext.SpanID(), start.SpanContext.SpanID())
	}
}

func keys(m map[string]tracetest.SpanStub) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
