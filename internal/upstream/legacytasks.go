package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/mcpcall"
	"github.com/openwop/temporal-mcp/workflows"
)

// Upstreams that serve the task methods of 2025-11-25. An upstream that
// declares capabilities.tasks.requests.tools.call has the tools whose
// execution.taskSupport is "optional" or "required" followed with
// package mcpcall, as a 2026-07-28 Tasks upstream's are (tasks.go): the
// tools/call asks for a task, whose id is in the run's history; tasks/get
// polls it on durable timers; tasks/cancel cancels it. Its tasks belong
// to the session that made them (and a stdio upstream's to its process),
// so the worker holds one more session with each such upstream for the
// task methods (mcpcall.Server.Hold). A task that asks (input_required)
// sends its elicitation/create on the stream of tasks/result, which an
// activity (mcpcall's MCPAwaitInput) holds open only until the question
// is answered: the question is relayed to the run as every upstream
// elicitation is (elicit.go's update), and the answer goes back within
// that stream.

// followLegacyTasksChange names the change that made the runs of the
// task tools of a 2025-11-25 upstream follow its tasks
// (workflow.GetVersion): a run started before it calls in one blocking
// activity.
const followLegacyTasksChange = "upstream-follow-legacy-tasks"

// newCalls makes the mcpcall activities of the upstreams: a 2026-07-28
// Tasks upstream is reached as it is; every other one is held, and the
// tools of those that make tasks of tools/call are found (taskTools).
func (s *Set) newCalls(ctx context.Context, opts Options, logger *zap.Logger) error {
	servers := map[string]mcpcall.Server{}
	for name, c := range s.conns {
		switch {
		case c.servesTasks():
			servers[name] = mcpcall.Server{URL: c.up.URL, Header: c.up.headers}
		case c.up.URL != "":
			servers[name] = mcpcall.Server{URL: c.up.URL, Header: c.up.headers, Hold: true,
				OnRequest: c.onTaskRequest, ProtocolVersion: "2025-11-25"}
		default:
			env := append([]string(nil), opts.Environ...)
			for k, v := range c.up.Env {
				env = append(env, k+"="+v)
			}
			servers[name] = mcpcall.Server{Command: c.up.Command, Args: c.up.Args, Env: env, Hold: true, OnRequest: c.onTaskRequest}
		}
	}
	calls, err := mcpcall.NewActivities(servers)
	if err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	s.calls = calls
	for name, c := range s.conns {
		if c.servesTasks() {
			continue
		}
		// An upstream that cannot be asked serves its tools the blocking
		// way.
		if c.taskTools, err = calls.TaskTools(ctx, name); err != nil {
			logger.Warn("upstream tasks not followed", zap.String("upstream", name), zap.Error(err))
		}
	}
	return nil
}

// legacyTasksTool makes the tool of a 2025-11-25 upstream's task tool:
// its runs follow the upstream task (followCall) and relay its questions.
func legacyTasksTool(name, description string, call CallRequest, ao workflow.ActivityOptions, safe bool, opts []workflows.ToolOption) workflows.Tool {
	return workflows.NewTool(name, description, func(ctx workflow.Context, args json.RawMessage) (output, error) {
		if workflow.GetVersion(ctx, followLegacyTasksChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return runCall(workflow.WithActivityOptions(ctx, ao), call, args, safe)
		}
		asks, err := serveElicitations(ctx)
		if err != nil {
			return output{}, err
		}
		all := func(*asked) bool { return true }
		defer asks.withdraw(all)
		return followCall(ctx, call, args, &mcpcall.Options{CallRetry: ao.RetryPolicy, Timeout: ao.StartToCloseTimeout,
			// A question the task no longer waits for (the upstream gave
			// up on it) is withdrawn.
			OnStatus: func(_ workflow.Context, t mcpcall.Task) {
				if t.Status != mcpcall.StatusInputRequired {
					asks.withdraw(all)
				}
			}}, safe)
	}, opts...)
}

// onTaskRequest answers a request the upstream sends in the held session:
// the elicitation/create of a task that asks, relayed to the run of the
// activity of ctx (mcpcall's MCPAwaitInput).
func (c *conn) onTaskRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != "elicitation/create" {
		return nil, &mcpcall.RPCError{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%s is not relayed", method)}
	}
	var p mcp.ElicitParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &mcpcall.RPCError{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("elicitation/create: %v", err)}
	}
	if !activity.IsActivity(ctx) {
		return nil, &mcpcall.RPCError{Code: jsonrpc.CodeInvalidParams, Message: "elicitation refused: no call waits for this task's question"}
	}
	info := activity.GetInfo(ctx)
	token := fmt.Sprintf("%s/%s/%d", info.WorkflowExecution.RunID, info.ActivityID, info.Attempt)
	v, loaded := c.taskAsks.LoadOrStore(token, &inflight{ctx: ctx, workflowID: info.WorkflowExecution.ID, runID: info.WorkflowExecution.RunID, token: token})
	if !loaded {
		context.AfterFunc(ctx, func() { c.taskAsks.Delete(token) })
	}
	res, err := c.relay(ctx, v.(*inflight), &p)
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return nil, &mcpcall.RPCError{Code: int(wire.Code), Message: wire.Message}
	}
	return res, err
}
