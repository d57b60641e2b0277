// Package telemetry is the adapter's observability: W3C trace context from
// the agent's request to every activity of its run, Prometheus metrics of
// the MCP mount and of the Temporal SDK, and the zap fields that join the
// log lines about a run.
//
// Tracing. NewTracerProvider builds an OpenTelemetry tracer provider that
// exports with OTLP, configured by the standard OTEL_* environment
// variables; with none set it returns nil, and every traced component then
// does no tracing work at all. Give the provider to the Temporal client
// with TemporalInterceptor (client.Options.Interceptors; the workers built
// on that client use it too), to mcpmount.Options.TracerProvider and to
// restapi.Options.TracerProvider. A request's span is the child of the
// traceparent the client sent (params._meta for MCP, the HTTP header for
// REST and for MCP requests without one in _meta); the workflow start,
// the workflow, its activities, signals and queries are spans of the same
// trace through the Temporal SDK's OpenTelemetry interceptor.
//
// Metrics. NewMetrics returns a Prometheus recorder on a registry of its
// own (never the global one): the mount records into it (it implements
// mcpmount.Recorder), TemporalMetricsHandler bridges the Temporal SDK's
// metrics into it, and Handler serves the registry.
//
// Logs. RunFields are the zap fields every log line about a run carries:
// runId, tenant, tool and traceId.
package telemetry
