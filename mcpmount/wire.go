package mcpmount

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
)

// ExtensionTasks is the id of the MCP Tasks extension this mount implements
// (revision 2026-07-28).
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// ProtocolVersion is the per-request (stateless) MCP revision the mount
// serves. Requests without the per-request _meta triple are served by the
// SDK's legacy path.
const ProtocolVersion = "2026-07-28"

// legacyVersion reports whether v is a session-era protocol version, served
// unchanged by the SDK on the same endpoint.
func legacyVersion(v string) bool {
	switch v {
	case "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05":
		return true
	}
	return false
}

// JSON-RPC error codes used by the mount.
const (
	codeParseError      = jsonrpc.CodeParseError
	codeInvalidRequest  = jsonrpc.CodeInvalidRequest
	codeMethodNotFound  = jsonrpc.CodeMethodNotFound
	codeInvalidParams   = jsonrpc.CodeInvalidParams
	codeInternalError   = jsonrpc.CodeInternalError
	codeHeaderMismatch  = mcp.CodeHeaderMismatch
	codeMissingCapabity = mcp.CodeMissingRequiredClientCapabilities
	codeUnsupportedVer  = mcp.CodeUnsupportedProtocolVersion
)

// Result types (the resultType discriminator of every 2026-07-28 result).
const (
	resultComplete      = "complete"
	resultInputRequired = "input_required"
	resultTask          = "task"
)

// Task statuses of the Tasks extension.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// errTaskNotFound is the one answer to every tasks/* request naming a task
// the caller cannot read: unknown, malformed, another tenant's. It carries
// no data, so the answers are byte-for-byte identical.
func errTaskNotFound() *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeInvalidParams, Message: "task not found"}
}

// errMissingCapability builds -32021 naming the capability the request
// should have declared. data is built from maps: the SDK's ClientCapabilities
// struct would add a spurious "roots":{}.
func errMissingCapability(message string, required map[string]any) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": required})
	return &jsonrpc.Error{Code: codeMissingCapabity, Message: message, Data: data}
}

func errTasksExtensionRequired(what string) *jsonrpc.Error {
	return errMissingCapability(what+" requires the client capability extensions[\""+ExtensionTasks+"\"]",
		map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}})
}

func errMethodNotFound(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeMethodNotFound, Message: fmt.Sprintf("method not found: %q", method)}
}

func errInvalidParams(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeInvalidParams, Message: msg}
}

// errUnavailable is the answer to a call of a tool the catalog knows but
// cannot run now (no live worker serves its task queue, conflicting
// publications): -32602, as an unknown tool (MCP reserves -32020..-32099
// for codes it defines and -32000..-32019 are legacy), with the reason in
// the message and data saying which tool and task queues, so that a client
// can tell it from an unknown tool and retry later (docs/protocol.md).
func errUnavailable(unav *catalog.UnavailableError) *jsonrpc.Error {
	queues := unav.TaskQueues
	if queues == nil {
		queues = []string{}
	}
	data, _ := json.Marshal(map[string]any{"unavailable": map[string]any{"tool": unav.Tool, "taskQueues": queues}})
	return &jsonrpc.Error{Code: codeInvalidParams, Message: unav.Error(), Data: data}
}

func errInternal() *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeInternalError, Message: "internal error"}
}

// content is one text content block of a tool result.
type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// toolResult is a CallToolResult. The mount builds its own: on go-sdk v1.8.0
// a *mcp.CallToolResult returned from middleware loses its resultType.
type toolResult struct {
	mcp.ResultBase
	// ResultType is "complete" for 2026-07-28 requests and omitted for
	// legacy ones (and inside a task's inlined result).
	ResultType        string          `json:"resultType,omitempty"`
	Content           []content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

// inputRequest is one entry of an inputRequests map: an elicitation the
// client answers (by an MRTR retry or tasks/update).
type inputRequest struct {
	Method string       `json:"method"`
	Params elicitParams `json:"params"`
}

// elicitParams are the params of an elicitation/create input request.
type elicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
}

// inputRequiredResult is the MRTR InputRequiredResult.
type inputRequiredResult struct {
	mcp.ResultBase
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]inputRequest `json:"inputRequests"`
	RequestState  string                  `json:"requestState,omitempty"`
}

// task holds the fields of the extension's Task. TTLMs has no omitempty: a
// nil TTL encodes as null (unlimited).
type task struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          *int64 `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
}

// createTaskResult answers a task-creating tools/call (resultType "task").
// It never carries result, error, inputRequests or requestState.
type createTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	task
}

// taskError is the JSON-RPC error a failed task carries.
type taskError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// detailedTaskResult answers tasks/get (resultType "complete").
type detailedTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	task
	InputRequests map[string]inputRequest `json:"inputRequests,omitempty"`
	Result        *toolResult             `json:"result,omitempty"`
	Error         *taskError              `json:"error,omitempty"`
}

// ackResult is the empty ack of tasks/update and tasks/cancel.
type ackResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// toolDescriptor is one entry of tools/list.
type toolDescriptor struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema is the schema of the structuredContent of the tool's
	// results, when it declares one.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are the tool's behaviour hints, when it declares any.
	Annotations *signals.ToolAnnotations `json:"annotations,omitempty"`
	// Execution is set for 2025-11-25 requests (the task dialect).
	Execution *toolExecution `json:"execution,omitempty"`
}

// toolExecution is a tool's execution object in the 2025-11-25 dialect.
type toolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

// taskSupport is the tool's task support on the wire; a spec that names
// none is optional, as callTool treats it.
func taskSupport(spec signals.ToolSpec) string {
	if spec.TaskSupport == "" {
		return string(signals.TaskOptional)
	}
	return string(spec.TaskSupport)
}

// listToolsResult answers tools/list. TTLMs and CacheScope are required on
// 2026-07-28 and omitted for legacy requests.
type listToolsResult struct {
	mcp.ResultBase
	ResultType string           `json:"resultType,omitempty"`
	Tools      []toolDescriptor `json:"tools"`
	TTLMs      *int64           `json:"ttlMs,omitempty"`
	CacheScope string           `json:"cacheScope,omitempty"`
}

// taskParams are the params of tasks/get and tasks/cancel. TaskID is raw so
// that a non-string id gets the uniform "task not found", not a decode error.
type taskParams struct {
	mcp.ParamsBase
	TaskID json.RawMessage `json:"taskId,omitempty"`
}

// updateParams are the params of tasks/update.
type updateParams struct {
	mcp.ParamsBase
	TaskID         json.RawMessage `json:"taskId,omitempty"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// elicitResponse is one inputResponses value answering an elicitation.
type elicitResponse struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}

// clientCaps is the part of a request's declared client capabilities the
// mount reads.
type clientCaps struct {
	Elicitation *elicitationCaps           `json:"elicitation,omitempty"`
	Extensions  map[string]json.RawMessage `json:"extensions,omitempty"`
}

// elicitationCaps is the declared elicitation capability: its modes.
type elicitationCaps struct {
	Form json.RawMessage `json:"form,omitempty"`
	URL  json.RawMessage `json:"url,omitempty"`
}

// tasks reports whether the request declared the Tasks extension. The legacy
// capabilities.tasks slot does not count.
func (c clientCaps) tasks() bool {
	_, ok := c.Extensions[ExtensionTasks]
	return ok
}

// elicitationForm reports whether the request declared form-mode
// elicitation ({} means form).
func (c clientCaps) elicitationForm() bool {
	return c.Elicitation != nil && (c.Elicitation.Form != nil || c.Elicitation.URL == nil)
}

// capsFromMeta decodes the request's _meta clientCapabilities. A request
// without them (legacy) declares nothing.
func capsFromMeta(meta map[string]any) clientCaps {
	var c clientCaps
	raw, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return c
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return clientCaps{}
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return clientCaps{}
	}
	return c
}

// modernMeta reports whether the request's _meta names a protocol version,
// which makes it a per-request (2026-07-28) request.
func modernMeta(meta map[string]any) bool {
	_, ok := meta[mcp.MetaKeyProtocolVersion]
	return ok
}

// capsFromRaw decodes a request's raw _meta clientCapabilities, as
// capsFromMeta does.
func capsFromRaw(raw json.RawMessage) clientCaps {
	var c clientCaps
	if len(raw) == 0 {
		return c
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return clientCaps{}
	}
	return c
}
