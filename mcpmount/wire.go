package mcpmount

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/signals"
)

// ExtensionTasks is the id of the MCP Tasks extension this mount implements
// (revision 2026-07-28).
const ExtensionTasks = core.ExtensionTasks

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

func errMethodNotFound(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeMethodNotFound, Message: fmt.Sprintf("method not found: %q", method)}
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
	InputRequests map[string]core.InputRequest `json:"inputRequests,omitempty"`
	Result        *core.ToolResult             `json:"result,omitempty"`
	Error         *taskError                   `json:"error,omitempty"`
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
