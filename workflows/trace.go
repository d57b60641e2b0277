package workflows

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry"
)

// traceScope is the instrumentation scope of the harness's spans.
const traceScope = "github.com/openwop/temporal-mcp/workflows"

// runSpan is the span the Temporal tracing interceptor runs the workflow
// in (telemetry.TemporalInterceptor), and whether there is one.
func runSpan(ctx workflow.Context) (trace.Span, bool) {
	span, ok := temporalotel.SpanFromWorkflowContext(ctx)
	if !ok || !span.SpanContext().IsValid() {
		return nil, false
	}
	return span, true
}

// runLogger is the workflow logger with the fields of every line about
// the run: runId, tenant, tool and, when the run is traced, traceId. It is
// built on its first line, so a run that logs nothing pays nothing.
func runLogger(ctx workflow.Context, snap signals.Snapshot) log.Logger {
	return &lazyLogger{build: func() log.Logger {
		kv := []any{"runId", snap.RunID, "tenant", snap.Owner.Tenant, "tool", snap.Tool}
		if span, ok := runSpan(ctx); ok {
			kv = append(kv, "traceId", span.SpanContext().TraceID().String())
		}
		return log.With(workflow.GetLogger(ctx), kv...)
	}}
}

// lazyLogger builds its logger on first use. Workflow code runs one
// coroutine at a time, so it needs no lock.
type lazyLogger struct {
	build func() log.Logger
	l     log.Logger
}

func (z *lazyLogger) get() log.Logger {
	if z.l == nil {
		z.l = z.build()
	}
	return z.l
}

// Debug logs at debug level.
func (z *lazyLogger) Debug(msg string, keyvals ...any) { z.get().Debug(msg, keyvals...) }

// Info logs at info level.
func (z *lazyLogger) Info(msg string, keyvals ...any) { z.get().Info(msg, keyvals...) }

// Warn logs at warn level.
func (z *lazyLogger) Warn(msg string, keyvals ...any) { z.get().Warn(msg, keyvals...) }

// Error logs at error level.
func (z *lazyLogger) Error(msg string, keyvals ...any) { z.get().Error(msg, keyvals...) }

// traceResolution records an applied resolution as a span of the run's
// trace, from the interrupt's request to its resolution, so the trace of
// the agent's call shows where the run waited for a human. Nothing is
// recorded while replaying, nor when the run is not traced.
func (r *run) traceResolution(in signals.Interrupt, res signals.Resolved) {
	if workflow.IsReplaying(r.root) {
		return
	}
	parent, ok := runSpan(r.root)
	if !ok {
		return
	}
	start := in.RequestedAt
	if start.IsZero() {
		start = time.Now()
	}
	ctx := trace.ContextWithSpan(context.Background(), parent)
	_, span := parent.TracerProvider().Tracer(traceScope).Start(ctx, "Interrupt:"+in.Key,
		trace.WithTimestamp(start),
		trace.WithAttributes(
			telemetry.RunIDKey.String(r.snap.RunID),
			attribute.String("openwop.interrupt.id", in.ID),
			attribute.String("openwop.interrupt.kind", string(in.Kind)),
			attribute.String("openwop.interrupt.action", string(res.Action)),
			attribute.String("openwop.interrupt.resolved_by", res.ResolvedBy.Principal()),
		))
	span.End()
}
