package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// ScopeName is the instrumentation scope of the adapter's own spans.
const ScopeName = "github.com/openwop/temporal-mcp"

// The standard OpenTelemetry environment variables NewTracerProvider
// reads. The exporters read the other OTEL_EXPORTER_OTLP_* variables
// (headers, timeout, certificates, insecure) themselves, and the SDK reads
// OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG and OTEL_BSP_*.
const (
	// EnvSDKDisabled (true) turns tracing off whatever else is set.
	EnvSDKDisabled = "OTEL_SDK_DISABLED"
	// EnvTracesExporter is otlp or none. Unset: otlp when an endpoint is
	// set, none otherwise.
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	// EnvEndpoint is the OTLP endpoint of every signal.
	EnvEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"
	// EnvTracesEndpoint is the OTLP endpoint of traces.
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	// EnvProtocol is the OTLP protocol: http/protobuf (the default) or
	// grpc.
	EnvProtocol = "OTEL_EXPORTER_OTLP_PROTOCOL"
	// EnvTracesProtocol is the OTLP protocol of traces.
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	// EnvServiceName names the service in the exported resource.
	EnvServiceName = "OTEL_SERVICE_NAME"
)

// OTLP protocols.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// LookupEnv looks up an environment variable (os.LookupEnv).
type LookupEnv func(string) (string, bool)

// TracingConfig is what the environment asks of tracing.
type TracingConfig struct {
	// Enabled reports whether spans are exported.
	Enabled bool
	// Protocol is ProtocolHTTP or ProtocolGRPC.
	Protocol string
}

// TracingFromEnv reads the tracing settings: tracing is on when an OTLP
// endpoint is set (EnvEndpoint or EnvTracesEndpoint) or EnvTracesExporter
// is otlp, and neither EnvSDKDisabled is true nor EnvTracesExporter none.
// An exporter or protocol it cannot serve is an error naming the variable.
func TracingFromEnv(env LookupEnv) (TracingConfig, error) {
	get := func(name string) string {
		v, _ := env(name)
		return strings.TrimSpace(v)
	}
	var tc TracingConfig
	if v := get(EnvSDKDisabled); v != "" {
		off, err := strconv.ParseBool(v)
		if err != nil {
			return tc, fmt.Errorf("%s=%q: want true or false", EnvSDKDisabled, v)
		}
		if off {
			return tc, nil
		}
	}
	switch exp := strings.ToLower(get(EnvTracesExporter)); exp {
	case "none":
		return tc, nil
	case "otlp":
		tc.Enabled = true
	case "":
		tc.Enabled = get(EnvEndpoint) != "" || get(EnvTracesEndpoint) != ""
	default:
		return tc, fmt.Errorf("%s=%q: want otlp or none", EnvTracesExporter, exp)
	}
	tc.Protocol = ProtocolHTTP
	name, p := EnvTracesProtocol, get(EnvTracesProtocol)
	if p == "" {
		name, p = EnvProtocol, get(EnvProtocol)
	}
	switch p {
	case "", ProtocolHTTP:
	case ProtocolGRPC:
		tc.Protocol = ProtocolGRPC
	default:
		return tc, fmt.Errorf("%s=%q: want %s or %s", name, p, ProtocolHTTP, ProtocolGRPC)
	}
	return tc, nil
}

// NewTracerProvider returns a tracer provider that exports spans with
// OTLP as the environment says (TracingFromEnv), for a service named
// serviceName unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name
// another. It returns nil when tracing is off: pass that nil on, and
// nothing is traced. Shut the provider down to flush its last spans.
func NewTracerProvider(ctx context.Context, serviceName string, env LookupEnv) (*sdktrace.TracerProvider, error) {
	tc, err := TracingFromEnv(env)
	if err != nil || !tc.Enabled {
		return nil, err
	}
	var exp *otlptrace.Exporter
	if tc.Protocol == ProtocolGRPC {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter (%s): %w", tc.Protocol, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", serviceName)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource (%s, OTEL_RESOURCE_ATTRIBUTES): %w", EnvServiceName, err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
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
