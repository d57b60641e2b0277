package mcpmount

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/telemetry"
)

// Recorder records the mount's metrics. telemetry/export.Metrics implements
// it on a Prometheus registry. Methods must be safe for concurrent use and
// cheap: they run on every request.
type Recorder interface {
	// Request records one answered request: its JSON-RPC method (one of
	// a fixed set, "other" for the rest, "unknown" when the body had
	// none), its outcome (Outcome*) and its latency.
	Request(method, outcome string, d time.Duration)
	// SSEStream records an SSE response stream that opens (+1) or
	// closes (-1).
	SSEStream(delta int)
	// AdmissionRejected records a request refused by admission control,
	// with a short fixed reason.
	AdmissionRejected(reason string)
	// BlockingCall records a task-less tools/call that starts (+1) or
	// stops (-1) waiting for its run.
	BlockingCall(delta int)
	// OwnershipCancelled records a run cancelled because the request that
	// owned it went away before its response was sent.
	OwnershipCancelled()
	// MRTRRound records an InputRequiredResult sent.
	MRTRRound()
}

// Outcomes of a request, as Recorder.Request receives them.
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

// methodLabel bounds the method label to the methods the endpoint knows.
func methodLabel(method string) string {
	switch method {
	case "":
		return "unknown"
	case "server/discover", "initialize", "ping", "tools/list", "tools/call",
		"tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list",
		"resources/list", "resources/read", "prompts/list", "prompts/get":
		return method
	}
	return "other"
}

// outcomeOf classifies a method handler's answer.
func outcomeOf(res mcp.Result, err error) string {
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
	case *createTaskResult:
		return OutcomeTask
	}
	return OutcomeOK
}

// Span attributes of the mount.
const (
	attrMethod = attribute.Key("mcp.method.name")
	attrCode   = attribute.Key("rpc.jsonrpc.error_code")
)

// observe wraps the method handlers with the request's span and its
// metrics. With neither a tracer nor a recorder it adds nothing.
func (m *Mount) observe(next mcp.MethodHandler) mcp.MethodHandler {
	if m.tracer == nil && m.metrics == nil {
		return next
	}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req) // not a request: nothing answers it
		}
		var header map[string][]string
		if extra := req.GetExtra(); extra != nil {
			header = extra.Header
		}
		tool := ""
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
			tool = p.Name
		}
		return m.observed(ctx, method, requestMeta(req), header, tool, func(ctx context.Context) (mcp.Result, error) {
			return next(ctx, method, req)
		})
	}
}

// observed runs handle, the handler of one request of method, under the
// request's server span (the child of the trace context of meta, its
// params._meta, or without one there of header, its HTTP headers) and
// records its metrics. tool names the tool of a tools/call ("" otherwise).
func (m *Mount) observed(ctx context.Context, method string, meta map[string]any, header map[string][]string, tool string,
	handle func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	if m.tracer == nil && m.metrics == nil {
		return handle(ctx)
	}
	start := time.Now()
	var span trace.Span
	if m.tracer != nil {
		ctx = telemetry.Extract(ctx, meta, header)
		name := method
		attrs := []attribute.KeyValue{attrMethod.String(method)}
		if tool != "" {
			name += " " + tool
			attrs = append(attrs, core.AttrTool.String(tool))
		}
		ctx, span = m.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	}
	res, err := handle(ctx)
	outcome := outcomeOf(res, err)
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
	if m.metrics != nil {
		m.metrics.Request(methodLabel(method), outcome, time.Since(start))
	}
	return res, err
}

// requestMeta is the request's params._meta (nil when it has no params).
func requestMeta(req mcp.Request) map[string]any {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p.GetMeta()
}
