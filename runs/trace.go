package runs

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry"
)

// StartTrace returns the span context of the request that started the
// run (signals.MemoTraceParent; invalid when it was not traced). It reads
// the run's memo with a describe call unless this process started or
// described the run lately. It is not part of Backend: only the edges'
// tracing reads it, and the assembly hands it to them as a function
// (mcpmount.Options.RunTrace, restapi.Options.RunTrace).
func (s *Service) StartTrace(ctx context.Context, caller signals.Subject, runID string) (trace.SpanContext, error) {
	if err := authorize(caller, runID); err != nil {
		return trace.SpanContext{}, err
	}
	if e, ok := s.rd.known.entry(runID); ok && e.facts&factTraced != 0 {
		return telemetry.ParseTraceParent(e.trace), nil
	}
	info, err := s.rd.describe(ctx, runID, caller.Tenant)
	if err != nil {
		return trace.SpanContext{}, err
	}
	s.rd.noteDescribed(runID, info)
	e, _ := s.rd.known.entry(runID)
	return telemetry.ParseTraceParent(e.trace), nil
}
