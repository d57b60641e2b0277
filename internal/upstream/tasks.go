package upstream

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/mcpcall"
	"github.com/openwop/temporal-mcp/workflows"
)

// Upstreams that serve Tasks. An HTTP upstream that speaks 2026-07-28
// and advertises the Tasks extension is followed with package mcpcall
// rather than called in one blocking activity: the run creates the
// upstream task in a short activity (its id in the run's history),
// follows it with tasks/get at its pollIntervalMs on durable timers, puts
// its input requests to the run's caller as the run's questions and
// answers them with tasks/update, and cancels it with tasks/cancel when
// the run is cancelled. No connection is held for the length of the
// work, and a worker killed during the call loses nothing.

// servesTasks reports whether the upstream, on session, is followed with
// mcpcall.
func (c *conn) servesTasks(session *mcp.ClientSession) bool {
	if c.up.URL == "" || session == nil {
		return false
	}
	r := session.InitializeResult()
	if r == nil || r.ProtocolVersion != "2026-07-28" || r.Capabilities == nil {
		return false
	}
	_, ok := r.Capabilities.Extensions["io.modelcontextprotocol/tasks"]
	return ok
}

// followTasksChange names the change that made the runs of a Tasks
// upstream's tools follow its tasks (workflow.GetVersion): a run started
// before it goes on calling in one blocking activity.
const followTasksChange = "upstream-follow-tasks"

// tasksTool makes the tool of a Tasks upstream's tool: its runs follow
// the upstream task (followCall), with the tool's policy (ao: the attempt
// timeout and, for a tool not safe to repeat, a single attempt of the
// tools/call). It may ask questions (the upstream's).
func tasksTool(name, description string, call CallRequest, ao workflow.ActivityOptions, safe bool, opts []workflows.ToolOption) workflows.Tool {
	return workflows.NewTool(name, description, func(ctx workflow.Context, args json.RawMessage) (output, error) {
		if workflow.GetVersion(ctx, followTasksChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return runCall(workflow.WithActivityOptions(ctx, ao), call, args, safe)
		}
		return followCall(ctx, call, args, &mcpcall.Options{CallRetry: ao.RetryPolicy, Timeout: ao.StartToCloseTimeout}, safe)
	}, append(opts, workflows.Suspends())...)
}

// followCall is the run of a call of a tool of an upstream that serves
// Tasks, its failures told apart as runCall tells them.
func followCall(ctx workflow.Context, call CallRequest, args json.RawMessage, opts *mcpcall.Options, safe bool) (output, error) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	res, err := mcpcall.CallTool(ctx, call.Upstream, call.Tool, args, opts)
	var rpc *mcpcall.RPCError
	switch {
	case err == nil && res.IsError:
		r, _ := result(call, res)
		return output{}, workflows.Fail(CodeUpstreamToolError, cmpOr(r.text(), "the upstream tool failed"))
	case err == nil:
		r, err := result(call, res)
		return output{r}, err
	case ctx.Err() != nil || temporal.IsCanceledError(err):
		return output{}, err
	case errors.As(err, &rpc):
		return output{}, workflows.Fail(CodeUpstreamError, err.Error())
	case !safe:
		return output{}, workflows.Fail(CodeUpstreamInterrupted, fmt.Sprintf(
			"the call of tool %s of upstream %s was interrupted (%v): it may or may not have taken effect, and it was not repeated (the tool is neither read-only nor idempotent)",
			call.Tool, call.Upstream, err))
	}
	return output{}, err
}
