package core

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// Codes of the errors the core answers.
const (
	codeInvalidRequest  = jsonrpc.CodeInvalidRequest
	codeInvalidParams   = jsonrpc.CodeInvalidParams
	codeInternalError   = jsonrpc.CodeInternalError
	codeMissingCapabity = mcp.CodeMissingRequiredClientCapabilities
)

// AttrTool is the span attribute that names a call's tool.
const AttrTool = attribute.Key("gen_ai.tool.name")

// MetaIdempotencyKey is the params._meta key of a tools/call's idempotency
// key (CallRequest.IdempotencyKey).
const MetaIdempotencyKey = "io.openwop/idempotencyKey"

// IdempotencyKeyOf reads the idempotency key of a tools/call from its
// raw params._meta value (absent: ""); a value that is not a string of 1
// to 255 printable ASCII characters is -32602.
func IdempotencyKeyOf(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	var key string
	if err := json.Unmarshal(raw, &key); err != nil || !runs.ValidIdempotencyKey(key) {
		return "", InvalidParams(fmt.Sprintf("_meta[%q] must be a string of 1 to 255 printable ASCII characters", MetaIdempotencyKey))
	}
	return key, nil
}

// ExtensionTasks is the id of the MCP Tasks extension this mount implements
// (revision 2026-07-28).
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// TaskNotFound is the one answer to every tasks/* request naming a task
// the caller cannot read: unknown, malformed, another tenant's. It carries
// no data, so the answers are byte-for-byte identical.
func TaskNotFound() *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeInvalidParams, Message: "task not found"}
}

// MissingCapability builds -32021 naming the capability the request
// should have declared. data is built from maps: the SDK's ClientCapabilities
// struct would add a spurious "roots":{}.
func MissingCapability(message string, required map[string]any) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": required})
	return &jsonrpc.Error{Code: codeMissingCapabity, Message: message, Data: data}
}

// TasksExtensionRequired is -32021 naming the Tasks extension, which what
// requires.
func TasksExtensionRequired(what string) *jsonrpc.Error {
	return MissingCapability(what+" requires the client capability extensions[\""+ExtensionTasks+"\"]",
		map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}})
}

// InvalidParams is -32602 with msg.
func InvalidParams(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeInvalidParams, Message: msg}
}

// unavailable is the answer to a call of a tool the catalog knows but
// cannot run now (no live worker serves its task queue, conflicting
// publications): -32602, as an unknown tool (MCP reserves -32020..-32099
// for codes it defines and -32000..-32019 are legacy), with the reason in
// the message and data saying which tool and task queues, so that a client
// can tell it from an unknown tool and retry later (docs/protocol.md).
func unavailable(unav *catalog.UnavailableError) *jsonrpc.Error {
	queues := unav.TaskQueues
	if queues == nil {
		queues = []string{}
	}
	data, _ := json.Marshal(map[string]any{"unavailable": map[string]any{"tool": unav.Tool, "taskQueues": queues}})
	return &jsonrpc.Error{Code: codeInvalidParams, Message: unav.Error(), Data: data}
}

// Internal is the one answer to a failure the client cannot act on.
func Internal() *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeInternalError, Message: "internal error"}
}

// Content is one content block of a tool result.
type Content = signals.Content

// ToolResult is a CallToolResult: what a run produced (signals.ToolResult)
// as a result of the request. The mount builds its own: on go-sdk v1.8.0
// a *mcp.CallToolResult returned from middleware loses its resultType.
type ToolResult struct {
	mcp.ResultBase
	// ResultType is "complete" for 2026-07-28 requests and omitted for
	// session-dialect ones (and inside a task's inlined result).
	ResultType string `json:"resultType,omitempty"`
	signals.ToolResult
}

// toolError is a tool error (isError) whose one text block is text.
func toolError(text string) *ToolResult {
	return &ToolResult{ToolResult: signals.ToolResult{Content: []Content{{Type: "text", Text: text}}, IsError: true}}
}

// ElicitRequest is one entry of an inputRequests map: an elicitation/create
// request the client answers (by an MRTR retry or tasks/update), not to be
// confused with workflows.InputRequest, the question a run asks.
type ElicitRequest struct {
	Method string       `json:"method"`
	Params ElicitParams `json:"params"`
}

// ElicitParams are the params of an elicitation/create input request.
type ElicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	// Meta is the request's params._meta: who may answer (MetaAnswerers)
	// and, for a question with a deadline, when it expires
	// (MetaExpiresAt).
	Meta *ElicitMeta `json:"_meta,omitempty"`
}

// ElicitMeta is the params._meta of an input request.
type ElicitMeta struct {
	Answerers *Answerers `json:"io.openwop/answerers,omitempty"`
	// ExpiresAt is when the question expires unanswered (the run then
	// withdraws it: signals.Interrupt.ExpiresAt); nil when it has no
	// deadline.
	ExpiresAt *time.Time `json:"io.openwop/expiresAt,omitempty"`
}

// InputRequired is the MRTR InputRequiredResult.
type InputRequired struct {
	mcp.ResultBase
	ResultType    string                   `json:"resultType"`
	InputRequests map[string]ElicitRequest `json:"inputRequests"`
	RequestState  string                   `json:"requestState,omitempty"`
}

// ElicitResponse is one inputResponses value answering an elicitation.
type ElicitResponse struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}

// ClientCaps is the part of a request's declared client capabilities the
// mount reads.
type ClientCaps struct {
	Elicitation *ElicitationCaps           `json:"elicitation,omitempty"`
	Extensions  map[string]json.RawMessage `json:"extensions,omitempty"`
}

// ElicitationCaps is the declared elicitation capability: its modes.
type ElicitationCaps struct {
	Form json.RawMessage `json:"form,omitempty"`
	URL  json.RawMessage `json:"url,omitempty"`
}

// Tasks reports whether the request declared the Tasks extension. The
// 2025-11-25 capabilities.tasks slot does not count.
func (c ClientCaps) Tasks() bool {
	_, ok := c.Extensions[ExtensionTasks]
	return ok
}

// FollowsRuns reports whether a client that declared c can follow a run
// by the protocol once its call was answered: it takes tasks (the Tasks
// extension). One that does not (even if it answers questions by
// elicitation) is offered the companion tools, with which it follows the
// handoff its call is answered with at the wait's bound.
func (c ClientCaps) FollowsRuns() bool { return c.Tasks() }

// ElicitationForm reports whether the request declared form-mode
// elicitation ({} means form).
func (c ClientCaps) ElicitationForm() bool {
	return c.Elicitation != nil && (c.Elicitation.Form != nil || c.Elicitation.URL == nil)
}

// CapsFromMeta decodes the request's _meta clientCapabilities. A request
// without them (of the session dialect) declares nothing.
func CapsFromMeta(meta map[string]any) ClientCaps {
	var c ClientCaps
	raw, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return c
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return ClientCaps{}
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return ClientCaps{}
	}
	return c
}

// ModernMeta reports whether the request's _meta names a protocol version,
// which makes it a per-request (2026-07-28) request.
func ModernMeta(meta map[string]any) bool {
	_, ok := meta[mcp.MetaKeyProtocolVersion]
	return ok
}

// CapsFromRaw decodes a request's raw _meta clientCapabilities, as
// CapsFromMeta does.
func CapsFromRaw(raw json.RawMessage) ClientCaps {
	var c ClientCaps
	if len(raw) == 0 {
		return c
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return ClientCaps{}
	}
	return c
}

// insufficientScope is the JSON-RPC error of a call refused for want of
// scope: the message of the HTTP refusal, naming the scopes.
func insufficientScope(r *auth.Refusal) *jsonrpc.Error {
	prefix := "unauthorized: "
	if auth.Status(r) == 403 {
		prefix = "forbidden: "
	}
	return &jsonrpc.Error{Code: codeInvalidRequest, Message: prefix + r.Error()}
}
