package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/mcpcall"
	"github.com/openwop/temporal-mcp/workflows"
)

// Error codes of the runs of upstream tools.
const (
	// CodeUpstreamToolError is the code of a run whose upstream tool
	// answered isError.
	CodeUpstreamToolError = "upstream_tool_error"
	// CodeUpstreamError is the code of a run whose upstream refused the
	// call with a JSON-RPC error.
	CodeUpstreamError = "upstream_error"
	// CodeUpstreamInterrupted is the code of a run whose call of a tool
	// that is not safe to repeat was interrupted: it may or may not have
	// taken effect, and it was not made again.
	CodeUpstreamInterrupted = "upstream_call_interrupted"
	// CodeUpstreamUnavailable is the code of a run whose upstream was not
	// connected when the call was to be sent (every attempt): the call
	// was not sent.
	CodeUpstreamUnavailable = "upstream_unavailable"
)

// activityName is the activity that calls an upstream tool
// (Activities.UpstreamCallTool).
const activityName = "UpstreamCallTool"

// upstreamErrorType is the type of the application error of a call the
// upstream refused: it is not retried.
const upstreamErrorType = "UpstreamError"

// unavailableErrorType is the type of the application error of a call
// whose upstream is not connected: it is retried as the tool's policy
// says, since the call was not sent.
const unavailableErrorType = "UpstreamUnavailable"

// CallRequest is the input of the activity: which tool of which upstream
// to call, with which arguments.
type CallRequest struct {
	Upstream  string          `json:"upstream"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Caller is the run's caller when the upstream forwards it
	// (Upstream.ForwardCaller).
	Caller *Caller `json:"caller,omitempty"`
}

// Result is the upstream's CallToolResult, as the run's history keeps it.
type Result struct {
	Content           json.RawMessage `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// text is the text of the result's text content blocks, one a line.
func (r Result) text() string {
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(r.Content, &blocks)
	var lines []string
	for _, b := range blocks {
		if b.Type == "text" {
			lines = append(lines, b.Text)
		}
	}
	return strings.Join(lines, "\n")
}

// output is a completed call's result as the run's outputs: the
// structured content when the upstream gave one, otherwise
// {"content": [...]} (its content blocks as they came); its text is the
// text of the upstream's text blocks.
type output struct{ r Result }

// MarshalJSON implements json.Marshaler.
func (o output) MarshalJSON() ([]byte, error) {
	if len(o.r.StructuredContent) > 0 && string(o.r.StructuredContent) != "null" {
		return o.r.StructuredContent, nil
	}
	return json.Marshal(map[string]json.RawMessage{"content": o.r.Content})
}

// ResultText implements workflows.ResultTexter.
func (o output) ResultText() string { return o.r.text() }

// tool makes the workflows.Tool that serves the upstream's tool t; tasks
// says the upstream serves Tasks (tasks.go).
func (c *conn) tool(t *mcp.Tool, tasks bool) workflows.Tool {
	in, err := json.Marshal(t.InputSchema)
	if err != nil {
		in = json.RawMessage(`"not encodable"`)
	}
	// Any upstream tool may elicit (elicit.go): each may ask a question.
	opts := []workflows.ToolOption{workflows.WithInputSchema(in), workflows.Suspends()}
	if t.OutputSchema != nil {
		out, err := json.Marshal(t.OutputSchema)
		if err != nil {
			out = json.RawMessage(`"not encodable"`)
		}
		opts = append(opts, workflows.WithOutputSchema(out))
	}
	a := t.Annotations
	if a == nil {
		a = &mcp.ToolAnnotations{}
	}
	if title := cmpOr(t.Title, a.Title); title != "" {
		opts = append(opts, workflows.WithTitle(title))
	}
	if a.ReadOnlyHint {
		opts = append(opts, workflows.WithReadOnlyHint())
	}
	if a.IdempotentHint {
		opts = append(opts, workflows.WithIdempotentHint())
	}
	if a.DestructiveHint != nil {
		opts = append(opts, workflows.WithDestructiveHint(*a.DestructiveHint))
	}
	if a.OpenWorldHint != nil {
		opts = append(opts, workflows.WithOpenWorldHint(*a.OpenWorldHint))
	}
	p := c.up.policy(t.Name)
	if p.ResultLimit > 0 {
		opts = append(opts, workflows.WithResultLimit(p.ResultLimit))
	}
	safe := a.ReadOnlyHint || a.IdempotentHint
	if p.Retry != nil {
		safe = *p.Retry
	}
	ao := workflows.DefaultActivityOptions()
	ao.StartToCloseTimeout, ao.HeartbeatTimeout = time.Duration(p.Timeout), time.Duration(p.Heartbeat)
	if !safe {
		ao.RetryPolicy.MaximumAttempts = 1
	}
	name := c.up.ToolName(t.Name)
	call := CallRequest{Upstream: c.up.Name, Tool: t.Name}
	description := cmpOr(t.Description, fmt.Sprintf("Tool %s of the MCP server %s.", t.Name, c.up.Name))
	if tasks {
		return tasksTool(name, description, call, ao, safe, opts)
	}
	if c.taskTools[t.Name] != "" {
		return legacyTasksTool(name, description, call, ao, safe, opts)
	}
	return workflows.NewTool(name, description, func(ctx workflow.Context, args json.RawMessage) (output, error) {
		req := call // per run: the closure is every run's
		req.Caller = callerOf(ctx, c.up)
		return runCall(workflow.WithActivityOptions(ctx, ao), req, args, safe)
	}, opts...)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// runCall is the run of a call: the activity that calls the upstream,
// its failures told apart.
func runCall(ctx workflow.Context, call CallRequest, args json.RawMessage, safe bool) (output, error) {
	call.Arguments = args
	asks, err := serveElicitations(ctx)
	if err != nil {
		return output{}, err
	}
	var res Result
	err = workflow.ExecuteActivity(ctx, activityName, call).Get(ctx, &res)
	asks.withdraw(func(*asked) bool { return true })
	var appErr *temporal.ApplicationError
	switch {
	case err == nil && res.IsError:
		return output{}, workflows.Fail(CodeUpstreamToolError, cmpOr(res.text(), "the upstream tool failed"))
	case err == nil:
		return output{res}, nil
	case ctx.Err() != nil || temporal.IsCanceledError(err):
		return output{}, err
	case errors.As(err, &appErr) && appErr.Type() == upstreamErrorType:
		return output{}, workflows.Fail(CodeUpstreamError, appErr.Error())
	case errors.As(err, &appErr) && appErr.Type() == unavailableErrorType:
		return output{}, workflows.Fail(CodeUpstreamUnavailable, appErr.Error())
	case !safe:
		return output{}, workflows.Fail(CodeUpstreamInterrupted, fmt.Sprintf(
			"the call of tool %s of upstream %s was interrupted (%v): it may or may not have taken effect, and it was not repeated (the tool is neither read-only nor idempotent)",
			call.Tool, call.Upstream, errors.Unwrap(err)))
	}
	return output{}, err
}

// Activities holds the activity that calls the upstream tools of a Set,
// and the activities of package mcpcall that follow the tasks of the
// upstreams that serve Tasks (tasks.go).
type Activities struct {
	set *Set
	*mcpcall.Activities
}

// UpstreamCallTool calls the upstream tool req names and heartbeats while
// it runs: the upstream's notifications/progress become the run's progress
// (activities.ReportProgress), a cancellation of the activity cancels the
// call (the upstream is sent notifications/cancelled), and a result that
// breaks the tool's output schema, or a JSON-RPC error, is a failure that
// is not retried.
func (a *Activities) UpstreamCallTool(ctx context.Context, req CallRequest) (Result, error) {
	c := a.set.conns[req.Upstream]
	var session *mcp.ClientSession
	var tool *mcp.Tool
	var err error
	if c != nil {
		if session, tool, err = c.current(req.Tool); err != nil {
			return Result{}, temporal.NewApplicationError(err.Error(), unavailableErrorType)
		}
	}
	if tool == nil {
		return Result{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("this worker serves no tool %s of upstream %s", req.Tool, req.Upstream), upstreamErrorType, nil)
	}
	info := activity.GetInfo(ctx)
	token := fmt.Sprintf("%s/%s/%d", info.WorkflowExecution.RunID, info.ActivityID, info.Attempt)
	key, _ := json.Marshal(token)
	c.progress.Store(string(key), progressReporter(ctx))
	defer c.progress.Delete(string(key))
	defer c.begin(ctx, token)()

	args := req.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	params := &mcp.CallToolParams{Name: req.Tool, Arguments: args}
	params.SetProgressToken(token)
	ctx = forward(ctx, c.up.ForwardCaller, req.Caller, params)
	var res *mcp.CallToolResult
	err = activities.Run(ctx, info.HeartbeatTimeout/3, nil, func(ctx context.Context) error {
		var err error
		res, err = session.CallTool(ctx, params)
		return err
	})
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return Result{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("upstream %s refused the call of %s: %s", req.Upstream, req.Tool, wire.Message), upstreamErrorType, nil)
	}
	if err != nil {
		return Result{}, err
	}
	return result(req, res)
}

// result turns the upstream's result into a Result. Its structured
// content is checked against the tool's output schema where every run's
// is, by the front ends (catalog.CheckOutput).
func result(req CallRequest, res *mcp.CallToolResult) (Result, error) {
	content, err := json.Marshal(res.Content)
	if err == nil {
		var structured []byte
		if res.StructuredContent != nil {
			structured, err = json.Marshal(res.StructuredContent)
		}
		if err == nil {
			return Result{Content: content, StructuredContent: structured, IsError: res.IsError}, nil
		}
	}
	return Result{}, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("upstream %s: the result of %s does not encode: %v", req.Upstream, req.Tool, err), upstreamErrorType, nil)
}

// progressReporter follows the notifications/progress of a call: each one
// that changes the counts becomes the run's progress. Counts that are not
// whole numbers (a fraction of 1) are given in percent.
func progressReporter(ctx context.Context) func(*mcp.ProgressNotificationParams) {
	var mu sync.Mutex
	var last activities.Progress
	return func(p *mcp.ProgressNotificationParams) {
		next := activities.Progress{Done: int64(p.Progress), Total: int64(p.Total)}
		if p.Progress != math.Trunc(p.Progress) || p.Total != math.Trunc(p.Total) {
			next = activities.Progress{Done: int64(p.Progress * 100), Total: 100}
			if p.Total > 0 {
				next.Done = int64(p.Progress / p.Total * 100)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if next == last {
			return
		}
		last = next
		_ = activities.ReportProgress(ctx, next)
	}
}
