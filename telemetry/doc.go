// Package telemetry is what the adapter's packages need to produce
// telemetry, on the OpenTelemetry API alone: the W3C trace context of a
// request (Extract reads it from an MCP request's params._meta or from
// HTTP headers), the Temporal SDK's OpenTelemetry tracing interceptor
// (TemporalInterceptor: the workflow start, the workflow, its activities,
// signals and queries become spans of the caller's trace), and the zap
// fields every log line about a run carries (RunFields: runId, tenant,
// tool, traceId), and the span attributes and link that tie a request's
// span to its run (RunIDKey, TenantKey, LinkRunStart).
//
// Where the telemetry goes (OTLP export configured by the OTEL_*
// environment variables, the Prometheus endpoint) is package
// telemetry/export, which only programs link: a tool author's worker or an
// embedding of the mount that does not export pays for none of it. With
// no tracer provider the adapter does no tracing work at all.
package telemetry
