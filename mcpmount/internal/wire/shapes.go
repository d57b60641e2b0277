package wire

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/signals"
)

// ProtocolVersion is the per-request (stateless) MCP revision the mount
// serves.
const ProtocolVersion = "2026-07-28"

// sessionVersion reports whether v is a protocol version of the session
// dialect, served unchanged by the SDK on the same endpoint.
func sessionVersion(v string) bool {
	switch v {
	case "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05":
		return true
	}
	return false
}

// JSON-RPC error codes used by the mount.
const (
	CodeParseError         = jsonrpc.CodeParseError
	CodeInvalidRequest     = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound     = jsonrpc.CodeMethodNotFound
	CodeInvalidParams      = jsonrpc.CodeInvalidParams
	CodeInternalError      = jsonrpc.CodeInternalError
	CodeHeaderMismatch     = mcp.CodeHeaderMismatch
	CodeMissingCapability  = mcp.CodeMissingRequiredClientCapabilities
	CodeUnsupportedVersion = mcp.CodeUnsupportedProtocolVersion
)

// Result types (the resultType discriminator of every 2026-07-28 result).
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
	ResultTask          = "task"
)

func ErrMethodNotFound(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q", method)}
}

// Task holds the fields of the extension's Task. TTLMs has no omitempty: a
// nil TTL encodes as null (unlimited).
type Task struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          *int64 `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
}

// CreateTaskResult answers a task-creating tools/call (resultType "task").
// It never carries result, error, inputRequests or requestState.
type CreateTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Task
}

// TaskError is the JSON-RPC error a failed task carries.
type TaskError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// DetailedTaskResult answers tasks/get (resultType "complete").
type DetailedTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Task
	InputRequests map[string]core.ElicitRequest `json:"inputRequests,omitempty"`
	Result        *core.ToolResult              `json:"result,omitempty"`
	Error         *TaskError                    `json:"error,omitempty"`
}

// AckResult is the empty ack of tasks/update and tasks/cancel.
type AckResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// ToolDescriptor is one entry of tools/list.
type ToolDescriptor struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema is the schema of the structuredContent of the tool's
	// results, when it declares one.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are the tool's behaviour hints, when it declares any.
	Annotations *signals.ToolAnnotations `json:"annotations,omitempty"`
	// Execution is set for 2025-11-25 requests (the task dialect).
	Execution *ToolExecution `json:"execution,omitempty"`
}

// ToolExecution is a tool's execution object in the session dialect
// (2025-11-25).
type ToolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

// TaskSupport returns the tool's task support on the wire; a spec that names
// none is optional, as the core's CallTool treats it.
func TaskSupport(spec signals.ToolSpec) string {
	if spec.TaskSupport == "" {
		return string(signals.TaskOptional)
	}
	return string(spec.TaskSupport)
}

// ListToolsResult answers tools/list. TTLMs and CacheScope are required on
// 2026-07-28 and omitted for session-dialect requests.
type ListToolsResult struct {
	mcp.ResultBase
	ResultType string           `json:"resultType,omitempty"`
	Tools      []ToolDescriptor `json:"tools"`
	TTLMs      *int64           `json:"ttlMs,omitempty"`
	CacheScope string           `json:"cacheScope,omitempty"`
}

// TaskParams are the params of tasks/get and tasks/cancel. TaskID is raw so
// that a non-string id gets the uniform "task not found", not a decode error.
type TaskParams struct {
	mcp.ParamsBase
	TaskID json.RawMessage `json:"taskId,omitempty"`
}

// UpdateParams are the params of tasks/update.
type UpdateParams struct {
	mcp.ParamsBase
	TaskID         json.RawMessage `json:"taskId,omitempty"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}
