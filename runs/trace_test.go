package runs_test

import (
	"encoding/json"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// TestStartTrace: a run started in a traced request remembers that
// request's span context in its memo, and any service (another replica,
// with nothing remembered) reads it back; an untraced run has none, and
// another tenant's caller learns nothing.
func TestStartTrace(t *testing.T) {
	s, _ := setup(t)
	env := testenv.Temporal(t)
	other := runs.New(env.Client, env.Logger, runs.Options{Namespace: env.Namespace})
	ctx := ctxT(t)

	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	traced, err := s.Start(trace.ContextWithSpanContext(ctx, sc), runs.NewRun{Tool: signals.ToolSpec{Name: "conformance-delay"},
		Arguments: json.RawMessage(`{"delayMs":1}`), Caller: alice, Transport: signals.TransportMCP})
	if err != nil {
		t.Fatal(err)
	}
	plain := start(t, s, "conformance-delay", `{"delayMs":1}`, alice)

	for _, svc := range []*runs.Service{s, other} {
		got, err := svc.StartTrace(ctx, alice, traced.RunID)
		if err != nil || got.TraceID() != tid || got.SpanID() != sid || !got.IsRemote() {
			t.Errorf("StartTrace(traced) = %v (remote %v), %v; want %v", got, got.IsRemote(), err, sc)
		}
		if got, err := svc.StartTrace(ctx, alice, plain.RunID); err != nil || got.IsValid() {
			t.Errorf("StartTrace(untraced) = %v, %v; want none", got, err)
		}
		if _, err := svc.StartTrace(ctx, mallory, traced.RunID); !errors.Is(err, runs.ErrTenantMismatch) {
			t.Errorf("StartTrace by another tenant = %v, want ErrTenantMismatch", err)
		}
	}
}
