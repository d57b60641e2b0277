package export

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

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
	// ProtocolHTTP is OTLP over HTTP with protobuf bodies (the default).
	ProtocolHTTP = "http/protobuf"
	// ProtocolGRPC is OTLP over gRPC.
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
