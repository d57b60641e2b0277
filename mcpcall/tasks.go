package mcpcall

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/activity"
)

// The task statuses of the Tasks extension.
const (
	StatusWorking       = "working"
	StatusInputRequired = "input_required"
	StatusCompleted     = "completed"
	StatusFailed        = "failed"
	StatusCancelled     = "cancelled"
)

// Task is a server's task as tasks/get (or the tools/call that created
// it) describes it.
type Task struct {
	// ID is the server's task id.
	ID string `json:"taskId"`
	// Status is one of the Status constants.
	Status string `json:"status"`
	// StatusMessage is the server's human-readable status, if any.
	StatusMessage string `json:"statusMessage,omitempty"`
	// PollIntervalMs is how often the server asks to be polled (0: it
	// does not say).
	PollIntervalMs int64 `json:"pollIntervalMs,omitempty"`
	// InputRequests are the questions outstanding (status
	// input_required), by key.
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	// Result is the tool's result (status completed).
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the JSON-RPC error the call ended with (status failed).
	Error *RPCError `json:"error,omitempty"`
	// Dialect is the protocol version the task is followed in: "" for
	// 2026-07-28, "2025-11-25" for the task methods of that version.
	Dialect string `json:"dialect,omitempty"`
}

// InputRequest is one question a tool asks: an MCP request (usually
// elicitation/create) the caller answers.
type InputRequest struct {
	// Method is the request's method, e.g. "elicitation/create".
	Method string `json:"method"`
	// Params are its parameters.
	Params json.RawMessage `json:"params,omitempty"`
}

// CallRequest is the input of the MCPCallTool activity.
type CallRequest struct {
	// Server names the server (a key of NewActivities' map).
	Server string
	// Tool is the tool's name.
	Tool string
	// Arguments are the tool's arguments (a JSON object).
	Arguments json.RawMessage
	// Key is the call's idempotency key; when empty, the activity derives
	// it from its workflow run and activity id, the same in every attempt.
	Key string
	// InputResponses and RequestState answer the questions an earlier
	// attempt of the call was answered with (resultType input_required).
	InputResponses map[string]json.RawMessage `json:",omitempty"`
	// RequestState echoes the earlier answer's requestState.
	RequestState string `json:",omitempty"`
}

// CallAnswer is what a tools/call answered, the result of the
// MCPCallTool activity: a result, a task, or questions to answer first.
type CallAnswer struct {
	// Key is the call's idempotency key.
	Key string
	// Result is the tool's result when the call completed.
	Result *mcp.CallToolResult `json:",omitempty"`
	// Task is the task the server made of the call.
	Task *Task `json:",omitempty"`
	// InputRequests are questions to answer before the call goes on
	// (resultType input_required), with its RequestState.
	InputRequests map[string]InputRequest `json:",omitempty"`
	// RequestState is the state to echo with the answers.
	RequestState string `json:",omitempty"`
}

// TaskRequest names a task of a server: the input of MCPGetTask,
// MCPUpdateTask and MCPCancelTask.
type TaskRequest struct {
	// Server names the server.
	Server string
	// TaskID is the server's task id.
	TaskID string
	// InputResponses answer the task's input requests (MCPUpdateTask).
	InputResponses map[string]json.RawMessage `json:",omitempty"`
	// Dialect is the task's (Task.Dialect).
	Dialect string `json:",omitempty"`
}

// MCPCallTool is the activity that sends a tools/call. A 2026-07-28
// server may answer it with a task; a server without that version (and a
// command) is called with the go-sdk client, which waits for the result
// while the activity heartbeats.
func (a *Activities) MCPCallTool(ctx context.Context, req CallRequest) (CallAnswer, error) {
	s, err := a.server(req.Server)
	if err != nil {
		return CallAnswer{}, err
	}
	if req.Key == "" {
		info := activity.GetInfo(ctx)
		req.Key = info.WorkflowExecution.RunID + "/" + info.ActivityID
	}
	defer a.heartbeating(ctx)()
	if s.URL != "" && s.ProtocolVersion == "" {
		ans, err := a.callWire(ctx, s, req)
		if !legacyOnly(err) {
			return ans, final(err)
		}
	}
	if s.URL != "" {
		ans, ok, err := a.callLegacy(ctx, s, req)
		if ok || err != nil && !legacyOnly(err) {
			return ans, final(err)
		}
	}
	cs, err := a.session(ctx, s)
	if err != nil {
		return CallAnswer{}, err
	}
	defer cs.Close()
	var args any
	if len(req.Arguments) > 0 {
		args = req.Arguments
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: req.Tool, Arguments: args,
		Meta: mcp.Meta{MetaIdempotencyKey: req.Key}})
	if err != nil {
		return CallAnswer{}, final(fmt.Errorf("call %q on %q: %w", req.Tool, req.Server, err))
	}
	return CallAnswer{Key: req.Key, Result: res}, nil
}

// callWire sends the tools/call of req at 2026-07-28.
func (a *Activities) callWire(ctx context.Context, s Server, req CallRequest) (CallAnswer, error) {
	params := map[string]any{"name": req.Tool}
	if len(req.Arguments) > 0 {
		params["arguments"] = req.Arguments
	}
	if req.RequestState != "" || len(req.InputResponses) > 0 {
		params["inputResponses"] = req.InputResponses
		params["requestState"] = req.RequestState
	}
	var raw json.RawMessage
	if err := a.wire(ctx, s).request(ctx, "tools/call", req.Tool, params, map[string]any{MetaIdempotencyKey: req.Key}, &raw); err != nil {
		return CallAnswer{}, err
	}
	var head struct {
		ResultType    string                  `json:"resultType"`
		InputRequests map[string]InputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return CallAnswer{}, fmt.Errorf("tools/call: decode result: %w", err)
	}
	ans := CallAnswer{Key: req.Key}
	switch head.ResultType {
	case "task":
		ans.Task = new(Task)
		if err := json.Unmarshal(raw, ans.Task); err != nil {
			return CallAnswer{}, fmt.Errorf("tools/call: decode task: %w", err)
		}
	case "input_required":
		ans.InputRequests, ans.RequestState = head.InputRequests, head.RequestState
	default:
		res, err := decodeResult(raw)
		if err != nil {
			return CallAnswer{}, fmt.Errorf("tools/call: %w", err)
		}
		ans.Result = res
	}
	return ans, nil
}

// decodeResult decodes a CallToolResult.
func decodeResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	res := new(mcp.CallToolResult)
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, fmt.Errorf("decode the tool's result: %w", err)
	}
	return res, nil
}

// MCPGetTask is the activity that reads a task (tasks/get).
func (a *Activities) MCPGetTask(ctx context.Context, req TaskRequest) (Task, error) {
	s, err := a.server(req.Server)
	if err != nil {
		return Task{}, err
	}
	if req.Dialect == legacyVersion {
		t, err := a.getLegacy(ctx, s, req.TaskID)
		return t, final(err)
	}
	var t Task
	err = a.wire(ctx, s).request(ctx, "tasks/get", req.TaskID, map[string]any{"taskId": req.TaskID}, nil, &t)
	return t, final(err)
}

// MCPUpdateTask is the activity that answers a task's input requests
// (tasks/update).
func (a *Activities) MCPUpdateTask(ctx context.Context, req TaskRequest) error {
	s, err := a.server(req.Server)
	if err != nil {
		return err
	}
	responses := req.InputResponses
	if responses == nil {
		responses = map[string]json.RawMessage{}
	}
	return final(a.wire(ctx, s).request(ctx, "tasks/update", req.TaskID,
		map[string]any{"taskId": req.TaskID, "inputResponses": responses}, nil, nil))
}

// MCPCancelTask is the activity that cancels a task (tasks/cancel).
func (a *Activities) MCPCancelTask(ctx context.Context, req TaskRequest) error {
	s, err := a.server(req.Server)
	if err != nil {
		return err
	}
	if req.Dialect == legacyVersion {
		return final(a.cancelLegacy(ctx, s, req.TaskID))
	}
	return final(a.wire(ctx, s).request(ctx, "tasks/cancel", req.TaskID, map[string]any{"taskId": req.TaskID}, nil, nil))
}
