package mcpcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
)

// DefaultPollInterval is how often a task is polled when its server
// names no pollIntervalMs.
const DefaultPollInterval = time.Second

// maxInputRounds bounds how many times a tools/call may be answered with
// input_required before the call gives up.
const maxInputRounds = 16

// minPollInterval bounds how fast a server may ask to be polled.
const minPollInterval = 100 * time.Millisecond

// Options tune a call. The zero value is ready to use.
type Options struct {
	// Answer answers the questions the tool asks; nil: AskHuman, which
	// asks the calling run's own human.
	Answer Answerer
	// OnStatus, when set, is called with the task each time its status
	// or status message changes, e.g. to report the tool's progress.
	OnStatus func(ctx workflow.Context, t Task)
	// Timeout bounds each attempt of the tools/call activity: a server
	// that answers no task works within it (default 10 minutes).
	Timeout time.Duration
	// CallRetry is the retry policy of the tools/call activity (nil: that
	// of workflows.DefaultActivityOptions), e.g. a single attempt for a
	// server that ignores the idempotency key and a tool not safe to
	// repeat.
	CallRetry *temporal.RetryPolicy
	// PollInterval is how often a task is polled when its server names
	// no interval (default DefaultPollInterval).
	PollInterval time.Duration
}

// Question is one question a tool asks its caller.
type Question struct {
	// Server and Tool name the call that asks.
	Server, Tool string
	// Key is the question's key among the tool's input requests.
	Key string
	// Request is the question as the server sent it.
	Request InputRequest
	// Message and Schema are those of an elicitation/create form request
	// (the requestedSchema); empty for other requests.
	Message string
	// Schema is the form's JSON Schema.
	Schema json.RawMessage
}

// Answerer answers a question of a tool with the MCP response to its
// request: for elicitation/create an ElicitResult such as
// {"action":"accept","content":{...}}. An error ends the call and cancels
// the tool's task.
type Answerer func(ctx workflow.Context, q Question) (json.RawMessage, error)

// AskHuman is the default Answerer: it asks the calling run's human
// through package workflows (the calling workflow must be a tool of that
// library), as workflows.AskInput with the question's key, its message as
// the title and its requestedSchema as the form. An accepted answer is
// sent as accept with the content, a decline as decline. It answers only
// form elicitations; other requests are an error.
func AskHuman(ctx workflow.Context, q Question) (json.RawMessage, error) {
	if q.Request.Method != "elicitation/create" || len(q.Schema) == 0 {
		return nil, fmt.Errorf("mcpcall: tool %q asks %s %q, which AskHuman cannot put to a person: pass an Answerer", q.Tool, q.Request.Method, q.Key)
	}
	a, err := workflows.AskInputFrom(ctx, workflows.InputRequest{Key: q.Key, Title: q.Message, Schema: q.Schema})
	if errors.Is(err, workflows.ErrDeclined) {
		return json.RawMessage(`{"action":"decline"}`), nil
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"action": "accept", "content": a.Value})
}

// ListTools returns the tools of the server named server (a key of
// NewActivities' map), in one activity.
func ListTools(ctx workflow.Context, server string) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	err := workflow.ExecuteActivity(shortActivity(ctx, "tools/list on "+server), (*Activities).MCPListTools, server).Get(ctx, &tools)
	if err != nil {
		return nil, fmt.Errorf("list the tools of %q: %w", server, rpcError(err))
	}
	return tools, nil
}

// CallTool calls the tool named tool on the server named server with args
// (encoded as a JSON object; nil for none) and returns its result. A
// result with IsError is returned as it is, not as an error.
//
// The tools/call is one activity and carries an idempotency key (its
// run id and the activity's position), the same in every attempt. When
// the server answers with a task, CallTool follows it: the task is in the
// activity's result in history, each tasks/get is a short activity, and
// between them a workflow timer waits the task's pollIntervalMs, so no
// connection is held and a worker restart loses nothing. Questions the
// tool asks (the task's input_required, or an input_required answer to
// the call) go to opts.Answer, and the answers back with tasks/update
// (or the call's retry). Cancelling ctx, and any error after the task
// exists, sends tasks/cancel before CallTool returns.
func CallTool(ctx workflow.Context, server, tool string, args any, opts *Options) (*mcp.CallToolResult, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	req := CallRequest{Server: server, Tool: tool}
	if args != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("call %q on %q: encode the arguments: %w", tool, server, err)
		}
		req.Arguments = raw
	}
	for round := 0; ; round++ {
		var ans CallAnswer
		if err := workflow.ExecuteActivity(callActivity(ctx, o, "tools/call "+tool+" on "+server), (*Activities).MCPCallTool, req).Get(ctx, &ans); err != nil {
			return nil, fmt.Errorf("call %q on %q: %w", tool, server, rpcError(err))
		}
		switch {
		case ans.Result != nil:
			return ans.Result, nil
		case ans.Task != nil:
			return follow(ctx, req, *ans.Task, o)
		case len(ans.InputRequests) == 0:
			return nil, fmt.Errorf("call %q on %q: the server answered input_required with no input requests", tool, server)
		case round == maxInputRounds:
			return nil, fmt.Errorf("call %q on %q: the server still asks for input after %d rounds of answers", tool, server, round)
		}
		responses, err := answerAll(ctx, req, ans.InputRequests, o, nil)
		if err != nil {
			return nil, err
		}
		req.Key, req.InputResponses, req.RequestState = ans.Key, responses, ans.RequestState
	}
}

// follow polls task t until it ends, answering its questions; on an
// error (ctx cancelled included) it cancels the task.
func follow(ctx workflow.Context, call CallRequest, t Task, o Options) (*mcp.CallToolResult, error) {
	answered := map[string]bool{}
	seen := ""
	began := workflow.Now(ctx)
	for {
		if o.OnStatus != nil && t.Status+"\x00"+t.StatusMessage != seen {
			seen = t.Status + "\x00" + t.StatusMessage
			o.OnStatus(ctx, t)
		}
		switch t.Status {
		case StatusCompleted:
			res, err := decodeResult(t.Result)
			if err != nil {
				return nil, fmt.Errorf("call %q on %q: task %s: %w", call.Tool, call.Server, t.ID, err)
			}
			return res, nil
		case StatusFailed:
			return nil, fmt.Errorf("call %q on %q: task %s failed: %w", call.Tool, call.Server, t.ID, taskError(t))
		case StatusCancelled:
			return nil, fmt.Errorf("call %q on %q: task %s was cancelled by the server: %s", call.Tool, call.Server, t.ID, t.StatusMessage)
		case StatusInputRequired:
			if t.Dialect == legacyVersion {
				// Its questions ride tasks/result: MCPAwaitInput lets it ask
				// (the held session's OnRequest answers) until it goes on.
				ref := TaskRequest{Server: call.Server, TaskID: t.ID, Dialect: t.Dialect, Session: t.Session}
				var next Task
				if err := workflow.ExecuteActivity(callActivity(ctx, o, "tasks/result: questions of "+call.Tool+" on "+call.Server), (*Activities).MCPAwaitInput, ref).Get(ctx, &next); err != nil {
					return nil, cancelTask(ctx, call.Server, t, fmt.Errorf("let task %s ask: %w", t.ID, rpcError(err)))
				}
				if t = next; t.Status != StatusInputRequired {
					continue
				}
				break // still asking: poll again after the interval
			}
			responses, err := answerAll(ctx, call, t.InputRequests, o, answered)
			if err != nil {
				return nil, cancelTask(ctx, call.Server, t, err)
			}
			if len(responses) > 0 {
				update := TaskRequest{Server: call.Server, TaskID: t.ID, InputResponses: responses, Dialect: t.Dialect}
				if err := workflow.ExecuteActivity(shortActivity(ctx, "tasks/update: answers to "+call.Tool+" on "+call.Server), (*Activities).MCPUpdateTask, update).Get(ctx, nil); err != nil {
					return nil, cancelTask(ctx, call.Server, t, fmt.Errorf("answer task %s: %w", t.ID, rpcError(err)))
				}
			}
		}
		if err := workflow.Sleep(ctx, pollInterval(t, o, workflow.Now(ctx).Sub(began))); err != nil {
			return nil, cancelTask(ctx, call.Server, t, err)
		}
		ref := TaskRequest{Server: call.Server, TaskID: t.ID, Dialect: t.Dialect, Session: t.Session}
		var next Task
		if err := workflow.ExecuteActivity(shortActivity(ctx, "tasks/get: "+call.Tool+" on "+call.Server), (*Activities).MCPGetTask, ref).Get(ctx, &next); err != nil {
			return nil, cancelTask(ctx, call.Server, t, fmt.Errorf("poll task %s of %q: %w", ref.TaskID, call.Tool, rpcError(err)))
		}
		t = next
	}
}

// answerAll answers the requests not yet answered (by key order, so that
// replay asks in the same order) and marks them answered.
func answerAll(ctx workflow.Context, call CallRequest, reqs map[string]InputRequest, o Options, answered map[string]bool) (map[string]json.RawMessage, error) {
	answer := o.Answer
	if answer == nil {
		answer = AskHuman
	}
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		if !answered[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := make(map[string]json.RawMessage, len(keys))
	for _, k := range keys {
		q := Question{Server: call.Server, Tool: call.Tool, Key: k, Request: reqs[k]}
		if q.Request.Method == "elicitation/create" {
			var p struct {
				Message         string          `json:"message"`
				RequestedSchema json.RawMessage `json:"requestedSchema"`
			}
			_ = json.Unmarshal(q.Request.Params, &p)
			q.Message, q.Schema = p.Message, p.RequestedSchema
		}
		resp, err := answer(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("call %q on %q: question %q: %w", call.Tool, call.Server, k, err)
		}
		out[k] = resp
		if answered != nil {
			answered[k] = true
		}
	}
	return out, nil
}

// cancelTask sends tasks/cancel for the task, on a context the caller's
// cancellation does not reach, and returns cause.
func cancelTask(ctx workflow.Context, server string, t Task, cause error) error {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	ref := TaskRequest{Server: server, TaskID: t.ID, Dialect: t.Dialect, Session: t.Session}
	if err := workflow.ExecuteActivity(shortActivity(dctx, "tasks/cancel: task "+t.ID+" on "+server), (*Activities).MCPCancelTask, ref).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("mcpcall: tasks/cancel failed", "server", server, "task", t.ID, "error", err)
	}
	return cause
}

// Polls of a long task stretch, so that its run's history stays far
// below Temporal's event limit (each poll adds about 11 events): a task
// followed for elapsed is polled at most once every elapsed/stretchRatio,
// and the stretch stops at maxStretch. At a 1 s pollIntervalMs that is
// about 180 polls in the first hour, then one a minute: the default
// limit of 51,200 events is reached after about three days, not after 77
// minutes.
const (
	stretchRatio = 30
	maxStretch   = time.Minute
)

// pollInterval is how long to wait before the next tasks/get of task t,
// followed for elapsed so far.
func pollInterval(t Task, o Options, elapsed time.Duration) time.Duration {
	d := time.Duration(t.PollIntervalMs) * time.Millisecond
	if d <= 0 {
		d = o.PollInterval
	}
	if d <= 0 {
		d = DefaultPollInterval
	}
	return max(d, minPollInterval, min(elapsed/stretchRatio, maxStretch))
}

// taskError is the error a failed task carries.
func taskError(t Task) error {
	if t.Error != nil {
		return t.Error
	}
	return errors.New(t.StatusMessage)
}

// callActivity is ctx with the options of the tools/call activity: it
// heartbeats, so a dead worker's attempt is retried within 30 s. summary
// is what the Temporal UI shows of the activity.
func callActivity(ctx workflow.Context, o Options, summary string) workflow.Context {
	ao := workflows.DefaultActivityOptions()
	ao.Summary = summary
	if o.Timeout > 0 {
		ao.StartToCloseTimeout = o.Timeout
	}
	ao.HeartbeatTimeout = 30 * time.Second
	if o.CallRetry != nil {
		ao.RetryPolicy = o.CallRetry
	}
	return workflow.WithActivityOptions(ctx, ao)
}

// shortActivity is ctx with the options of a short request; summary is
// what the Temporal UI shows of the activity.
func shortActivity(ctx workflow.Context, summary string) workflow.Context {
	ao := workflows.DefaultActivityOptions()
	ao.Summary = summary
	ao.StartToCloseTimeout = 30 * time.Second
	return workflow.WithActivityOptions(ctx, ao)
}

// rpcError turns an activity's failure that carries a server's JSON-RPC
// error back into an *RPCError (errors.As finds it); other errors are
// returned as they are.
func rpcError(err error) error {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == rpcErrorType {
		var rpc RPCError
		if app.Details(&rpc) == nil {
			return &rpc
		}
	}
	return err
}
