package telemetry

import (
	"context"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// ScopeName is the instrumentation scope of the adapter's own spans.
const ScopeName = "github.com/openwop/temporal-mcp"

// Span attributes that the MCP mount, the REST API and the workflow
// harness all set, so that a trace backend finds a run's spans by one name.
const (
	// RunIDKey is the run a span is about.
	RunIDKey = attribute.Key("openwop.run_id")
	// TenantKey is the tenant of that run.
	TenantKey = attribute.Key("openwop.tenant")
)

// LinkRunStart links span to sc, the span context of the request that
// started the run the span is about (openwop.link=run-start). It adds no
// link when sc is invalid or span is in that trace already.
func LinkRunStart(span trace.Span, sc trace.SpanContext) {
	if !sc.IsValid() || sc.TraceID() == span.SpanContext().TraceID() {
		return
	}
	span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("openwop.link", "run-start")}})
}

// Propagator is the propagation of trace context the adapter uses: W3C
// traceparent and tracestate, and W3C baggage.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// TemporalInterceptor is the Temporal SDK's OpenTelemetry tracing
// interceptor on tp. Set it in client.Options.Interceptors: the client's
// calls (workflow start, signals, queries, cancellation) become spans of
// the trace in their context, and the workers built on the client run
// each workflow, activity, signal and query handler in a span of the same
// trace. Nil tp: nil, nothing to install.
func TemporalInterceptor(tp trace.TracerProvider) (interceptor.Interceptor, error) {
	if tp == nil {
		return nil, nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:            tp.Tracer(ScopeName + "/temporal"),
		TextMapPropagator: Propagator(),
	})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	return i, nil
}

// MetaCarrier reads and writes trace context in an MCP request's
// params._meta (keys traceparent, tracestate, baggage).
type MetaCarrier map[string]any

// Get returns the string value of key.
func (c MetaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

// Set sets key to value.
func (c MetaCarrier) Set(key, value string) { c[key] = value }

// Keys lists the keys of the map.
func (c MetaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Extract returns ctx with the remote span context the request carries:
// the traceparent (and tracestate, baggage) of meta when it has one,
// otherwise those of the HTTP headers h (nil for none).
func Extract(ctx context.Context, meta map[string]any, h http.Header) context.Context {
	p := Propagator()
	if _, ok := meta["traceparent"].(string); ok {
		return p.Extract(ctx, MetaCarrier(meta))
	}
	if h != nil {
		return p.Extract(ctx, propagation.HeaderCarrier(h))
	}
	return ctx
}

// TraceParent is the W3C traceparent of the span in ctx ("" when ctx has
// no valid span).
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// ParseTraceParent is the span context of a W3C traceparent (invalid when
// s is not one).
func ParseTraceParent(s string) trace.SpanContext {
	if s == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": s})
	return trace.SpanContextFromContext(ctx)
}
