// Package export sets up where the adapter's telemetry goes: OTLP export
// of traces as its options say (the OTLP exporter and the OpenTelemetry
// SDK read the standard OTEL_* variables of the endpoint, headers,
// sampler and resource themselves; this package reads no environment),
// and a Prometheus registry of its own holding the MCP
// mount's metrics and the Temporal SDK's, with its HTTP endpoint.
//
// The packages that produce telemetry (mcpmount, restapi, runs,
// workflows) depend only on the OpenTelemetry API and package telemetry;
// a program that wants the telemetry exported builds a Telemetry here
// (New, or With for its own tracer provider) and hands its pieces on:
// ClientOptions to the Temporal client options, TracerProvider to
// mcpmount.Options and restapi.Options, Metrics to mcpmount.Options, and
// ServeMetrics for the endpoint.
package export
