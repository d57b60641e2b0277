package core

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/telemetry"
)

// runTracing ties the spans of the core's requests to the traces of the
// runs they work on. With no tracer it does nothing.
type runTracing struct {
	tracer trace.Tracer
	// runTrace reads the trace a run was started in (nil: none).
	runTrace func(ctx context.Context, caller signals.Subject, runID string) (trace.SpanContext, error)
	log      *zap.Logger
}

// annotate records on the request's span the run it works on.
func (r runTracing) annotate(ctx context.Context, runID, tool string) {
	if r.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(telemetry.RunIDKey.String(runID), telemetry.TenantKey.String(runid.Tenant(runID)))
	if tool != "" {
		span.SetAttributes(AttrTool.String(tool))
	}
}

// link links the request's span to the trace of the run it names.
func (r runTracing) link(ctx context.Context, caller signals.Subject, runID string) {
	if r.tracer == nil {
		return
	}
	r.annotate(ctx, runID, "")
	if r.runTrace == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	sc, err := r.runTrace(ctx, caller, runID)
	if err != nil {
		r.log.Debug("read the run's trace context", append(telemetry.RunFields(ctx, runID, ""), zap.Error(err))...)
		return
	}
	telemetry.LinkRunStart(span, sc)
}

// runContext returns ctx in the trace the run was started in, for
// work on the run that no request asked for (the cancellation of a run
// whose owning request went away).
func (r runTracing) runContext(ctx context.Context, caller signals.Subject, runID string) context.Context {
	if r.runTrace == nil {
		return ctx
	}
	sc, err := r.runTrace(ctx, caller, runID)
	if err != nil || !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}
