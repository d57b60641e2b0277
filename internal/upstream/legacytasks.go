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

// legacyServer is the name of the mcpcall server of upstream's
// 2025-11-25 task methods.
func legacyServer(upstream string) string { return upstream + "@2025-11-25" }

// newCalls makes the mcpcall activities of the upstreams: an HTTP
// upstream's 2026-07-28 Tasks are reached under its name, and every
// upstream's 2025-11-25 tasks under legacyServer's, in a held session so
// that they are followed in the session that made them.
func (s *Set) newCalls(f File, opts Options) error {
	servers := map[string]mcpcall.Server{}
	for _, u := range f.Upstreams {
		onRequest := func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			return s.conns[u.Name].onTaskRequest(ctx, method, params)
		}
		if u.URL != "" {
			servers[u.Name] = mcpcall.Server{URL: u.URL, Header: u.headers}
			servers[legacyServer(u.Name)] = mcpcall.Server{URL: u.URL, Header: u.headers, Hold: true, OnRequest: onRequest, ProtocolVersion: "2025-11-25"}
			continue
		}
		env := append([]string(nil), opts.Environ...)
		for k, v := range u.Env {
			env = append(env, k+"="+v)
		}
		servers[legacyServer(u.Name)] = mcpcall.Server{Command: u.Command, Args: u.Args, Env: env, Hold: true, OnRequest: onRequest}
	}
	calls, err := mcpcall.NewActivities(servers)
	if err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	s.calls = calls
	return nil
}

// legacyTaskTools are the tools the upstream makes 2025-11-25 tasks of,
// asked in the held session (tasks: it serves 2026-07-28 Tasks, and has
// none). An upstream that cannot be asked has its tools called the
// blocking way.
func (c *conn) legacyTaskTools(ctx context.Context, tasks bool) map[string]string {
	if tasks {
		return nil
	}
	tools, err := c.set.calls.TaskTools(ctx, legacyServer(c.up.Name))
	if err != nil {
		c.logger.Warn("upstream tasks not followed", zap.Error(err))
	}
	return tools
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
		call := call // per run: the closure is every run's
		call.Upstream = legacyServer(call.Upstream)
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
