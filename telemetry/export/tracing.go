package export

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// OTLP protocols.
const (
	// ProtocolHTTP is OTLP over HTTP with protobuf bodies (the default).
	ProtocolHTTP = "http/protobuf"
	// ProtocolGRPC is OTLP over gRPC.
	ProtocolGRPC = "grpc"
)

// TracingConfig is what is asked of tracing. The program reads it from
// the standard OpenTelemetry variables (internal/app/config does, from
// OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and the protocol variables).
type TracingConfig struct {
	// Enabled reports whether spans are exported.
	Enabled bool
	// Protocol is ProtocolHTTP or ProtocolGRPC ("": ProtocolHTTP).
	Protocol string
}

// NewTracerProvider returns a tracer provider that exports spans with
// OTLP as tc says, for a service named serviceName unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name another. The OTLP
// exporter and the OpenTelemetry SDK read the endpoint, headers, sampler
// and resource variables themselves, as the OpenTelemetry specification
// says. It returns nil when tc is not Enabled: pass that nil on, and
// nothing is traced. Shut the provider down to flush its last spans.
func NewTracerProvider(ctx context.Context, serviceName string, tc TracingConfig) (*sdktrace.TracerProvider, error) {
	if !tc.Enabled {
		return nil, nil
	}
	var exp *otlptrace.Exporter
	var err error
	switch tc.Protocol {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx)
	case "", ProtocolHTTP:
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTLP protocol %q: want %s or %s", tc.Protocol, ProtocolHTTP, ProtocolGRPC)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter (%s): %w", tc.Protocol, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", serviceName)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
