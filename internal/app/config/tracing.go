package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/openwop/temporal-mcp/telemetry/export"
)

// The standard OpenTelemetry variables that decide whether traces are
// exported, and how (Config.Tracing). The OTLP exporter reads the other
// OTEL_EXPORTER_OTLP_* variables (headers, timeout, certificates,
// insecure) itself, and the OpenTelemetry SDK reads OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG
// and OTEL_BSP_*.
const (
	// EnvOTelSDKDisabled (true) turns tracing off whatever else is set.
	EnvOTelSDKDisabled = "OTEL_SDK_DISABLED"
	// EnvOTelTracesExporter is otlp or none. Unset: otlp when an endpoint
	// is set, none otherwise.
	EnvOTelTracesExporter = "OTEL_TRACES_EXPORTER"
	// EnvOTelEndpoint is the OTLP endpoint of every signal.
	EnvOTelEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"
	// EnvOTelTracesEndpoint is the OTLP endpoint of traces.
	EnvOTelTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	// EnvOTelProtocol is the OTLP protocol: http/protobuf (the default) or
	// grpc.
	EnvOTelProtocol = "OTEL_EXPORTER_OTLP_PROTOCOL"
	// EnvOTelTracesProtocol is the OTLP protocol of traces.
	EnvOTelTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// tracing reads Config.Tracing: tracing is on when an OTLP endpoint is set
// (EnvOTelEndpoint or EnvOTelTracesEndpoint) or EnvOTelTracesExporter is
// otlp, and neither EnvOTelSDKDisabled is true nor EnvOTelTracesExporter
// none. An exporter or protocol the adapter cannot serve is an error
// naming the variable.
func (l *loader) tracing() error {
	var tc export.TracingConfig
	defer func() { l.cfg.Tracing = tc }()
	if v := l.get(EnvOTelSDKDisabled); v != "" {
		off, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s=%q: want true or false", EnvOTelSDKDisabled, v)
		}
		if off {
			return nil
		}
	}
	switch exp := strings.ToLower(l.get(EnvOTelTracesExporter)); exp {
	case "none":
		return nil
	case "otlp":
		tc.Enabled = true
	case "":
		tc.Enabled = l.get(EnvOTelEndpoint) != "" || l.get(EnvOTelTracesEndpoint) != ""
	default:
		return fmt.Errorf("%s=%q: want otlp or none", EnvOTelTracesExporter, exp)
	}
	tc.Protocol = export.ProtocolHTTP
	name, p := EnvOTelTracesProtocol, l.get(EnvOTelTracesProtocol)
	if p == "" {
		name, p = EnvOTelProtocol, l.get(EnvOTelProtocol)
	}
	switch p {
	case "", export.ProtocolHTTP:
	case export.ProtocolGRPC:
		tc.Protocol = export.ProtocolGRPC
	default:
		return fmt.Errorf("%s=%q: want %s or %s", name, p, export.ProtocolHTTP, export.ProtocolGRPC)
	}
	return nil
}
