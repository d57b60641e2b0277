package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals/runid"
)

// Log field keys of the lines about a run.
const (
	// FieldRunID is the run's id (the workflow ID).
	FieldRunID = "runId"
	// FieldTenant is the run's tenant.
	FieldTenant = "tenant"
	// FieldTool is the tool the run runs (the workflow type).
	FieldTool = "tool"
	// FieldTraceID is the trace id of the request or task the line is
	// about ("" when not traced).
	FieldTraceID = "traceId"
)

// TraceID is the trace id of the span in ctx ("" when ctx has none).
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// RunFields are the fields of a log line about the run runID of the tool
// tool, in the request or operation of ctx: runId, tenant (the runId's
// tenant segment), tool and traceId ("" when not traced).
func RunFields(ctx context.Context, runID, tool string) []zap.Field {
	return []zap.Field{
		zap.String(FieldRunID, runID),
		zap.String(FieldTenant, runid.Tenant(runID)),
		zap.String(FieldTool, tool),
		zap.String(FieldTraceID, TraceID(ctx)),
	}
}
