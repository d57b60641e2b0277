package mcpcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"go.temporal.io/sdk/temporal"
)

// The 2025-11-25 task methods. A server of that version that declares
// capabilities.tasks.requests.tools.call is asked for a task
// (params.task); the task is then followed as a 2026-07-28 one is, each
// activity in a session of its own: tasks/get for its status and, once
// it ends, tasks/result for its result; tasks/cancel to cancel it. The
// questions of such a task come as requests on a tasks/result stream,
// which a durable caller cannot hold open: a task that asks fails the
// call (and is cancelled).

// legacyVersion is the protocol version of the task methods of 2025-11-25.
const legacyVersion = "2025-11-25"

// legacyTask is a 2025-11-25 Task.
type legacyTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	PollInterval  int64  `json:"pollInterval"`
}

// task is t as a Task followed in 2025-11-25.
func (t legacyTask) task() *Task {
	return &Task{ID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage, PollIntervalMs: t.PollInterval, Dialect: legacyVersion}
}

// openLegacy opens a 2025-11-25 session with s and reports whether the
// server makes tasks of tools/call.
func (a *Activities) openLegacy(ctx context.Context, s Server) (*wireClient, bool, error) {
	c := a.wire(ctx, s)
	c.legacy = true
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tasks struct {
				Requests struct {
					Tools struct {
						Call json.RawMessage `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	err := c.request(ctx, "initialize", "", map[string]any{"protocolVersion": legacyVersion,
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "mcpcall", "version": "1"}}, nil, &init)
	if err != nil {
		return nil, false, err
	}
	resp, err := c.post(ctx, "notifications/initialized", "", map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	if err != nil {
		return nil, false, fmt.Errorf("notifications/initialized: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c, init.ProtocolVersion == legacyVersion && init.Capabilities.Tasks.Requests.Tools.Call != nil, nil
}

// closeLegacy ends c's session (best effort: the server may keep none).
func closeLegacy(ctx context.Context, c *wireClient) {
	if c.session == "" {
		return
	}
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	req.Header.Set("Mcp-Session-Id", c.session)
	hc := c.http
	if hc == nil {
		hc = http.DefaultClient
	}
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

// callLegacy sends req as a 2025-11-25 tools/call that asks for a task.
// ok is false when the server makes no task of it (it declares none, or
// refuses a task for this tool): the call is then made the blocking way.
func (a *Activities) callLegacy(ctx context.Context, s Server, req CallRequest) (ans CallAnswer, ok bool, err error) {
	c, tasks, err := a.openLegacy(ctx, s)
	if err != nil || !tasks {
		return CallAnswer{}, false, err
	}
	defer closeLegacy(ctx, c)
	params := map[string]any{"name": req.Tool, "task": map[string]any{}}
	if len(req.Arguments) > 0 {
		params["arguments"] = req.Arguments
	}
	var raw json.RawMessage
	err = c.request(ctx, "tools/call", "", params, map[string]any{MetaIdempotencyKey: req.Key}, &raw)
	var rpc *RPCError
	if errors.As(err, &rpc) && rpc.Code == -32601 {
		return CallAnswer{}, false, nil
	}
	if err != nil {
		return CallAnswer{}, true, err
	}
	var created struct {
		Task *legacyTask `json:"task"`
	}
	if err := json.Unmarshal(raw, &created); err != nil {
		return CallAnswer{}, true, fmt.Errorf("tools/call: decode result: %w", err)
	}
	if created.Task != nil {
		return CallAnswer{Key: req.Key, Task: created.Task.task()}, true, nil
	}
	res, err := decodeResult(raw)
	return CallAnswer{Key: req.Key, Result: res}, true, err
}

// getLegacy reads a 2025-11-25 task, with its result (tasks/result) once
// it has ended. A task that asks for input is an error: its question
// cannot be relayed.
func (a *Activities) getLegacy(ctx context.Context, s Server, id string) (Task, error) {
	c, _, err := a.openLegacy(ctx, s)
	if err != nil {
		return Task{}, err
	}
	defer closeLegacy(ctx, c)
	var lt legacyTask
	if err := c.request(ctx, "tasks/get", "", map[string]any{"taskId": id}, nil, &lt); err != nil {
		return Task{}, err
	}
	t := lt.task()
	switch t.Status {
	case StatusInputRequired:
		return Task{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"task %s asks for input, which mcpcall does not relay for a %s server (its question rides a tasks/result stream)", id, legacyVersion),
			"mcpcall.InputNotRelayed", nil)
	case StatusCompleted, StatusFailed:
		var raw json.RawMessage
		err := c.request(ctx, "tasks/result", "", map[string]any{"taskId": id}, nil, &raw)
		var rpc *RPCError
		switch {
		case errors.As(err, &rpc):
			t.Status, t.Error = StatusFailed, rpc
		case err != nil:
			return Task{}, err
		default:
			// An isError result fails a 2025-11-25 task; as in 2026-07-28,
			// it is the call's result.
			t.Status, t.Result = StatusCompleted, raw
		}
	}
	return *t, nil
}

// cancelLegacy cancels a 2025-11-25 task.
func (a *Activities) cancelLegacy(ctx context.Context, s Server, id string) error {
	c, _, err := a.openLegacy(ctx, s)
	if err != nil {
		return err
	}
	defer closeLegacy(ctx, c)
	return c.request(ctx, "tasks/cancel", "", map[string]any{"taskId": id}, nil, nil)
}
