package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/requeststate"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry"
)

// CallRequest is a tools/call in the core's terms, as a dialect decoded it
// from its wire: the tool, its arguments, what the client declared, and how
// the client reaches the call while it runs.
type CallRequest struct {
	// Name and Arguments are the tool's name and its arguments.
	Name      string
	Arguments json.RawMessage
	// ArgumentsProblem is a tool-input error found in the arguments before
	// they were decoded (a number out of float range).
	ArgumentsProblem error
	// Caps are the client capabilities the request declared.
	Caps ClientCaps
	// Task is what the request says about running as a task.
	Task TaskMode
	// MustAskForTask: a tool that runs only as a task must be asked for
	// one (TaskWanted); that the caller can take one does not do.
	MustAskForTask bool
	// FollowsTasks: the client follows runs as tasks in a dialect of its
	// own (a 2025-11-25 session that declared capabilities.tasks), though
	// this call did not ask for one; it is offered no companion handoff.
	FollowsTasks bool
	// RequestState and InputResponses are those of a multi-round-trip
	// request (MRTR) retry.
	RequestState   string
	InputResponses mcp.InputResponseMap
	// ProgressToken is the request's _meta.progressToken, nil when none.
	ProgressToken any
	// IdempotencyKey is the request's MetaIdempotencyKey ("": none): the
	// tenant's calls of the tool with that key start at most one run.
	IdempotencyKey string
	// Asker asks the client the run's questions during the call (nil: the
	// dialect cannot, and a question ends a blocking call).
	Asker Asker
	// Notify sends the call's progress notifications (nil: none can be).
	Notify ProgressNotifier
	// Claim is the request's ownership claim (nil: no transport tracks it).
	Claim *ownership.Claim
	// Response is the response that carries the answer, as far as the
	// core acts on it (nil: the transport offers nothing of it).
	Response Response
}

// Response is what the transport that carries a call's response offers the
// core while the call waits for its run.
type Response interface {
	// KeepAlive starts keep-alives on the response (an SSE comment every
	// interval, or nothing when the response is no stream); the returned
	// func stops them.
	KeepAlive(interval time.Duration) (stop func())
}

// TaskMode is what a call says about running as a task.
type TaskMode int

const (
	// TaskNone: the caller cannot take a task; the call waits for its run.
	TaskNone TaskMode = iota
	// TaskAccepted: the caller can take a task; the tool's task support
	// decides (a tool that forbids tasks runs as a waiting call).
	TaskAccepted
	// TaskWanted: the caller asks for a task; a tool that forbids tasks
	// refuses the call.
	TaskWanted
)

// TaskRefusal is the core's refusal of a call the tool's task support does
// not allow; a dialect words it.
type TaskRefusal struct {
	// Tool is the tool called.
	Tool string
	// Forbidden: the caller wanted a task of a tool that never runs as one;
	// otherwise the tool runs only as a task, which the caller did not take.
	Forbidden bool
}

func (e *TaskRefusal) Error() string {
	if e.Forbidden {
		return fmt.Sprintf("tool %q does not run as a task", e.Tool)
	}
	return fmt.Sprintf("tool %q runs only as a task", e.Tool)
}

// TaskCreated is the core's answer to a call whose run started as a task:
// the run as it was then. A dialect encodes it in its shape.
type TaskCreated struct {
	mcp.ResultBase
	// Snap is the run as it was when the call was answered.
	Snap signals.Snapshot
}

// CallTool answers tools/call in the core's terms; the dialect that decoded
// the request encodes the answer. Arguments are validated before anything
// starts: an unknown tool is -32602, arguments the tool refuses are a tool
// result with isError naming the property and the rule. A call that wants
// or accepts a task gets a TaskCreated once the run exists (unless the
// tool forbids tasks; see TaskMode); any other call waits for the run and
// gets its tool result, or an InputRequired when the run asks for
// input. A call the tool's task support does not allow is a *TaskRefusal.
func (m *Core) CallTool(ctx context.Context, req *CallRequest) (mcp.Result, error) {
	if m.companions.serves(req.Name) {
		return m.companions.callCompanion(ctx, req)
	}
	if m.runList.serves(req.Name) {
		return m.runList.call(ctx, req)
	}
	caller, err := m.Caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := m.lookupTool(ctx, caller, req.Name, req.Arguments)
	if err != nil {
		return nil, err
	}
	spec := t.Spec()
	// A client the dialect can ask during the call is asked the run's
	// questions while the call waits.
	elicit := req.Asker != nil
	args, err := t.ValidateArguments(req.Arguments)
	if perr := req.ArgumentsProblem; perr != nil {
		err = &catalog.ArgumentsError{Tool: spec.Name, Problem: "invalid arguments: " + perr.Error(), Err: perr}
	}
	if err != nil {
		// A tool-input error is a tool result the model can act on
		// (SEP-1303), not a protocol error; no run starts.
		return toolError(err.Error()), nil
	}
	if err := checkTaskSupport(spec, req); err != nil {
		return nil, err
	}
	tasked := req.Task != TaskNone && spec.TaskSupport != signals.TaskForbidden
	// A client that takes no task follows its run, past the wait's bound,
	// through the companion tools; one that cannot answer a question
	// either, past its first question too.
	handsOver := m.companions != nil && req.Task == TaskNone && !req.FollowsTasks
	companion := handsOver && !canAnswer(req)
	if !tasked && spec.CanSuspend && !canAnswer(req) && !companion {
		// A blocking call could not carry the run's questions back.
		return nil, MissingCapability(
			fmt.Sprintf("tool %q may ask for input while it runs: call it as a task (declare the Tasks extension %q), or declare the client capability elicitation so that its questions are asked during the call", req.Name, ExtensionTasks),
			map[string]any{"elicitation": map[string]any{}})
	}
	digest, err := requeststate.Digest(args)
	if err != nil {
		return nil, InvalidParams(fmt.Sprintf("tool %q: %v", req.Name, err))
	}
	call := &blockingCall{tool: t, caller: caller, claim: req.Claim, response: req.Response,
		digest: digest, asker: req.Asker, notify: req.Notify, elicit: elicit && !tasked, progressToken: req.ProgressToken,
		companion: companion, handsOver: handsOver, idempotencyKey: req.IdempotencyKey}
	if req.RequestState != "" && !tasked {
		return m.continueRun(ctx, call, req.RequestState, req.InputResponses)
	}
	inputs, early, err := m.preRunInputs(t, req)
	if ir, ok := early.(*InputRequired); ok && call.elicit {
		if req.InputResponses, err = m.askPreRun(ctx, req.Asker, req.InputResponses, ir); err != nil {
			return nil, err
		}
		inputs, early, err = m.preRunInputs(t, req)
	}
	if early != nil || err != nil {
		return early, err
	}
	snap, err := m.startRun(ctx, call, args, inputs, tasked)
	if err != nil {
		return nil, err
	}
	call.runID = snap.RunID
	if tasked {
		return m.inline(ctx, call, snap)
	}
	return m.await(ctx, call)
}

// inline answers a call whose run started as a task. It waits up to the
// tool's inline wait (signals.ToolSpec.InlineWait, else the server's) for
// the run to end or to ask a question, owning the run as a blocking call
// does, so that a short run costs its client no poll: the TaskCreated it
// answers then holds the run's end, which the dialect answers as a
// blocking call would be (its tool result, or the JSON-RPC error of an
// rpc failure, answered here). A run still working at the bound, or
// asking, is answered with the task as it is then.
func (m *Core) inline(ctx context.Context, c *blockingCall, snap signals.Snapshot) (mcp.Result, error) {
	wait := m.inlineWait
	if w := c.tool.Spec().InlineWait; w != nil {
		wait = time.Duration(*w)
	}
	if wait > 0 && !snap.Status.Terminal() {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		defer c.claim.AfterGone(cancel)()
		got, err := m.runs.Await(wctx, c.caller, c.runID, func(s signals.Snapshot) bool {
			return s.Status.Terminal() || SuspendsForInput(s)
		}, runs.PublishedOnly())
		switch {
		case err == nil:
			snap = got
		case isGone(c.claim):
			return nil, context.Canceled // the claim cancels the run
		case ctx.Err() != nil:
			c.claim.Abandon()
			return nil, context.Canceled
		case !errors.Is(err, context.DeadlineExceeded):
			// The run exists: the client follows it as a task.
			m.RunLog(ctx, c.runID, c.tool.Name()).Warn("wait for a task's run to answer it inline", zap.Error(err))
		}
	}
	m.pacer.Observe(snap)
	if snap.Status.Terminal() && RPCFailure(snap) {
		return nil, &jsonrpc.Error{Code: int64(snap.Error.RPCCode), Message: snap.Error.Message}
	}
	return &TaskCreated{Snap: snap}, nil
}

// lookupTool finds the tool a call with the arguments args names, as the
// caller's tenant sees the catalog: a tool it may not see is unknown, and
// one whose scopes the caller's token lacks is refused (ScopeRefusal).
// During a ramp it is the version the call starts on (catalog.Source.ForCall,
// Tool.ForArguments).
func (m *Core) lookupTool(ctx context.Context, caller signals.Subject, name string, args json.RawMessage) (*catalog.Tool, error) {
	t, err := m.catalog.ForCall(ctx, name)
	var unav *catalog.UnavailableError
	switch {
	case errors.As(err, &unav):
		if !unav.Visible(caller.Tenant) {
			return nil, InvalidParams(fmt.Sprintf("unknown tool %q", name))
		}
		return nil, unavailable(unav)
	case errors.Is(err, catalog.ErrUnknownTool):
		return nil, InvalidParams(fmt.Sprintf("unknown tool %q", name))
	case err != nil:
		m.log.Error("read the tool catalog", zap.Error(err))
		return nil, Internal()
	}
	t = t.ForArguments(args)
	if !t.Spec().VisibleTo(caller.Tenant) {
		return nil, InvalidParams(fmt.Sprintf("unknown tool %q", name))
	}
	if refusal := m.ScopeRefusal(caller, t.Spec()); refusal != nil {
		return nil, insufficientScope(refusal)
	}
	return t, nil
}

// checkTaskSupport refuses a call the tool's task support does not allow.
func checkTaskSupport(spec signals.ToolSpec, req *CallRequest) error {
	switch {
	case req.Task == TaskWanted && spec.TaskSupport == signals.TaskForbidden:
		return &TaskRefusal{Tool: spec.Name, Forbidden: true}
	case spec.TaskSupport == signals.TaskRequired && req.Task != TaskWanted && (req.Task == TaskNone || req.MustAskForTask):
		return &TaskRefusal{Tool: spec.Name}
	}
	return nil
}

// startRun starts the call's run once admission control let it: from then
// until its whole response is sent, the request owns the run.
func (m *Core) startRun(ctx context.Context, call *blockingCall, args json.RawMessage, inputs map[string]json.RawMessage, tasked bool) (signals.Snapshot, error) {
	need := admission.NeedStart
	if !tasked {
		need |= admission.NeedWait
	}
	ticket, err := m.admit(call.caller.Tenant, need)
	if err != nil {
		return signals.Snapshot{}, err
	}
	defer ticket.Done()
	spec := call.tool.Spec()
	snap, err := m.runs.Start(ctx, runs.NewRun{
		Tool:         spec,
		Arguments:    args,
		Caller:       call.caller,
		Transport:    signals.TransportMCP,
		PreRunInputs: inputs,
		// The version the arguments were checked against, when the
		// catalog chose one (a versioned tool).
		Version: call.tool.Pinned(),
		// An idempotent call answers the run its key started, if any.
		IdempotencyKey: call.idempotencyKey,
	})
	ticket.Started()
	if errors.Is(err, runs.ErrKeyReused) {
		// The caller's mistake, not the server's: answered, not logged.
		return signals.Snapshot{}, InvalidParams(fmt.Sprintf("_meta[%q]: %v", MetaIdempotencyKey, err))
	}
	if err != nil {
		m.log.Error("start run", zap.String(telemetry.FieldTool, spec.Name), zap.String(telemetry.FieldTenant, call.caller.Tenant),
			zap.String(telemetry.FieldTraceID, telemetry.TraceID(ctx)), zap.Error(err))
		if errors.Is(err, runs.ErrSearchAttributesMissing) {
			// A setup fault the operator must fix; the message says how.
			return signals.Snapshot{}, &jsonrpc.Error{Code: codeInternalError, Message: err.Error()}
		}
		return signals.Snapshot{}, Internal()
	}
	// If the client is already gone, Own cancels the run at once.
	if call.claim != nil {
		call.claim.Own(call.caller, snap.RunID, telemetry.RunFields(ctx, snap.RunID, spec.Name)...)
	} else {
		m.runs.Release(snap.RunID) // no transport tracks this request
	}
	m.tracing.annotate(ctx, snap.RunID, spec.Name)
	if m.afterStart != nil {
		m.afterStart(snap.RunID)
	}
	return snap, nil
}

// canAnswer reports whether the client of req can answer a run's
// questions: it declared form elicitation (answered by MRTR rounds), or its
// dialect asks them during the call.
func canAnswer(req *CallRequest) bool { return req.Asker != nil || req.Caps.ElicitationForm() }

// RPCFailure reports whether the run failed with a JSON-RPC error raised
// for the call (task status failed) rather than a tool error.
func RPCFailure(s signals.Snapshot) bool {
	return s.Status == signals.StatusFailed && s.Error != nil && s.Error.RPCCode != 0
}

// preRunInputs handles a tool's pre-run input requests (MRTR before any run
// exists). It returns the answers to start the run with, or an early result
// (InputRequiredResult for missing answers, an error result for a declined
// request) when no run must start.
func (m *Core) preRunInputs(t *catalog.Tool, req *CallRequest) (map[string]json.RawMessage, mcp.Result, error) {
	spec := t.Spec()
	if len(spec.PreRunInputs) == 0 {
		return nil, nil, nil
	}
	answers := make(map[string]json.RawMessage, len(spec.PreRunInputs))
	missing := map[string]ElicitRequest{}
	for _, in := range spec.PreRunInputs {
		resp, ok := req.InputResponses[in.Key].(*mcp.ElicitResult)
		if !ok {
			schema := in.Schema
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			missing[in.Key] = ElicitRequest{
				Method: methods.Elicit,
				Params: ElicitParams{Mode: "form", Message: in.Message, RequestedSchema: schema},
			}
			continue
		}
		switch resp.Action {
		case "accept":
		case "decline", "cancel":
			return nil, toolError(fmt.Sprintf("input %q was %sed; the tool did not run", in.Key, resp.Action)), nil
		default:
			return nil, nil, InvalidParams(fmt.Sprintf("inputResponses[%q]: unknown action %q", in.Key, resp.Action))
		}
		answer, err := json.Marshal(resp.Content)
		if err != nil || resp.Content == nil {
			answer = json.RawMessage("{}")
		}
		if answer, err = t.ValidateInput(in.Key, answer); err != nil {
			return nil, nil, InvalidParams(fmt.Sprintf("inputResponses[%q]: invalid content: %v", in.Key, catalog.Problem(err)))
		}
		answers[in.Key] = answer
	}
	if len(missing) == 0 {
		return answers, nil, nil
	}
	if !canAnswer(req) {
		keys := make([]string, 0, len(missing))
		for k := range missing {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, nil, MissingCapability(
			fmt.Sprintf("tool %q asks for input %v before it runs, which requires the client capability elicitation", spec.Name, keys),
			map[string]any{"elicitation": map[string]any{}})
	}
	if m.metrics != nil {
		m.metrics.MRTRRound()
	}
	return nil, &InputRequired{InputRequests: missing}, nil
}
