package wire

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/telemetry"
)

// Outcomes of a request, as mcpmount.Recorder.Request receives them (its
// doc lists them too).
const (
	// OutcomeOK is a result.
	OutcomeOK = "ok"
	// OutcomeToolError is a CallToolResult with isError.
	OutcomeToolError = "tool_error"
	// OutcomeInputRequired is an InputRequiredResult (MRTR).
	OutcomeInputRequired = "input_required"
	// OutcomeTask is a CreateTaskResult.
	OutcomeTask = "task"
	// OutcomeError is a JSON-RPC error.
	OutcomeError = "error"
	// OutcomeCancelled is a request whose client went away.
	OutcomeCancelled = "cancelled"
	// OutcomeRejected is a request refused before any method ran (gate,
	// credential, body, headers, version).
	OutcomeRejected = "rejected"
)

// label is the metric label of method: the one the dialects' method
// tables give it (Label), "unknown" for none, methods.Other for a method
// no table counts.
func (o Observer) label(method string) string {
	if method == "" {
		return "unknown"
	}
	if o.Label != nil {
		if l, ok := o.Label(method); ok {
			return l
		}
	}
	return methods.Other
}

// OutcomeOf classifies a method handler's answer.
func OutcomeOf(res mcp.Result, err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return OutcomeCancelled
	case err != nil:
		return OutcomeError
	}
	switch r := res.(type) {
	case *core.ToolResult:
		if r.IsError {
			return OutcomeToolError
		}
	case *core.InputRequired:
		return OutcomeInputRequired
	case *CreateTaskResult:
		return OutcomeTask
	}
	return OutcomeOK
}

// Span attributes of the mount.
const (
	attrMethod = attribute.Key("mcp.method.name")
	attrCode   = attribute.Key("rpc.jsonrpc.error_code")
)

// Observer traces and measures the requests of every dialect. A zero
// Observer adds nothing.
type Observer struct {
	// Tracer starts each request's server span (nil: none).
	Tracer trace.Tracer
	// Metrics records each answered request and SSE stream (nil: none).
	Metrics Metrics
	// Label is the metric label of a method, from the dialects' method
	// tables, if one knows it (nil: every method is methods.Other).
	Label func(method string) (string, bool)
}

// Metrics records the requests of the dialects; mcpmount.Recorder
// implements it.
type Metrics interface {
	// Request records one answered request: its method label
	// (Observer.Label), its outcome (Outcome*) and its latency.
	Request(method, outcome string, d time.Duration)
	// SSEStream records an SSE response stream that opens (+1) or
	// closes (-1).
	SSEStream(delta int)
}

// Refuse writes a refusal of the request and records it.
func (o Observer) Refuse(w http.ResponseWriter, in *Incoming, e Refusal) {
	WriteRefusal(w, e)
	if o.Metrics != nil {
		o.Metrics.Request(o.label(in.Msg.Method), OutcomeRejected, time.Since(in.Start))
	}
}

// Stream records an SSE response stream that opens; the returned func
// records that it closed.
func (o Observer) Stream() (closed func()) {
	if o.Metrics == nil {
		return func() {}
	}
	o.Metrics.SSEStream(1)
	return func() { o.Metrics.SSEStream(-1) }
}

// Observed runs handle, the handler of one request of method, under the
// request's server span (the child of the trace context of meta, its
// params._meta, or without one there of header, its HTTP headers) and
// records its metrics. tool names the tool of a tools/call ("" otherwise).
func (o Observer) Observed(ctx context.Context, method string, meta map[string]any, header map[string][]string, tool string,
	handle func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	if o.Tracer == nil && o.Metrics == nil {
		return handle(ctx)
	}
	start := time.Now()
	var span trace.Span
	if o.Tracer != nil {
		ctx = telemetry.Extract(ctx, meta, header)
		name := method
		attrs := []attribute.KeyValue{attrMethod.String(method)}
		if tool != "" {
			name += " " + tool
			attrs = append(attrs, core.AttrTool.String(tool))
		}
		ctx, span = o.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	}
	res, err := handle(ctx)
	outcome := OutcomeOf(res, err)
	if span != nil {
		if err != nil {
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) {
				span.SetAttributes(attrCode.Int64(rpcErr.Code))
			}
			span.SetStatus(codes.Error, err.Error())
		} else if outcome == OutcomeToolError {
			span.SetStatus(codes.Error, outcome)
		}
		span.SetAttributes(attribute.String("openwop.outcome", outcome))
		span.End()
	}
	if o.Metrics != nil {
		o.Metrics.Request(o.label(method), outcome, time.Since(start))
	}
	return res, err
}
