package mcpmount

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/mcpmount/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/requeststate"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry"
)

// callRequest is a tools/call in the core's terms, as a dialect decoded it
// from its wire: the tool, its arguments, what the client declared, and how
// the client reaches the call while it runs.
type callRequest struct {
	name      string
	arguments json.RawMessage
	// argumentsProblem is a tool-input error found in the arguments before
	// they were decoded (a number out of float range).
	argumentsProblem error
	// caps are the client capabilities the request declared.
	caps clientCaps
	// task is what the request says about running as a task.
	task taskMode
	// mustAskForTask: a tool that runs only as a task must be asked for
	// one (taskWanted); that the caller can take one does not do.
	mustAskForTask bool
	// requestState and inputResponses are those of a multi-round-trip
	// request (MRTR) retry.
	requestState   string
	inputResponses mcp.InputResponseMap
	// progressToken is the request's _meta.progressToken, nil when none.
	progressToken any
	// asker asks the client the run's questions during the call (nil: the
	// dialect cannot, and a question ends a blocking call).
	asker asker
	// notify sends the call's progress notifications (nil: none can be).
	notify progressNotifier
	// claim is the request's ownership claim (nil: no transport tracks it).
	claim *ownership.Claim
	// exchange is the HTTP request that carries the call (nil: stdio).
	exchange *httpCall
}

// taskMode is what a call says about running as a task.
type taskMode int

const (
	// taskNone: the caller cannot take a task; the call waits for its run.
	taskNone taskMode = iota
	// taskAccepted: the caller can take a task; the tool's task support
	// decides (a tool that forbids tasks runs as a waiting call).
	taskAccepted
	// taskWanted: the caller asks for a task; a tool that forbids tasks
	// refuses the call.
	taskWanted
)

// taskRefusal is the core's refusal of a call the tool's task support does
// not allow; a dialect words it.
type taskRefusal struct {
	tool string
	// forbidden: the caller wanted a task of a tool that never runs as one;
	// otherwise the tool runs only as a task, which the caller did not take.
	forbidden bool
}

func (e *taskRefusal) Error() string {
	if e.forbidden {
		return fmt.Sprintf("tool %q does not run as a task", e.tool)
	}
	return fmt.Sprintf("tool %q runs only as a task", e.tool)
}

// taskCreated is the core's answer to a call whose run started as a task:
// the run as it was then. A dialect encodes it in its shape.
type taskCreated struct {
	mcp.ResultBase
	snap signals.Snapshot
}

// callTool answers tools/call in the core's terms; the dialect that decoded
// the request encodes the answer. Arguments are validated before anything
// starts: an unknown tool is -32602, arguments the tool refuses are a tool
// result with isError naming the property and the rule. A call that wants
// or accepts a task gets a taskCreated once the run exists (unless the
// tool forbids tasks; see taskMode); any other call waits for the run and
// gets its tool result, or an inputRequiredResult when the run asks for
// input. A call the tool's task support does not allow is a *taskRefusal.
func (m *Mount) callTool(ctx context.Context, req *callRequest) (mcp.Result, error) {
	caller, err := m.caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := m.lookupTool(ctx, caller, req.name)
	if err != nil {
		return nil, err
	}
	spec := t.Spec()
	// A client the dialect can ask during the call is asked the run's
	// questions while the call waits.
	elicit := req.asker != nil
	if elicit {
		req.caps.Elicitation = &elicitationCaps{Form: json.RawMessage(`{}`)}
	}
	args, err := t.ValidateArguments(req.arguments)
	if perr := req.argumentsProblem; perr != nil {
		err = &catalog.ArgumentsError{Tool: spec.Name, Problem: "invalid arguments: " + perr.Error(), Err: perr}
	}
	if err != nil {
		// A tool-input error is a tool result the model can act on
		// (SEP-1303), not a protocol error; no run starts.
		return &toolResult{Content: []content{{Type: "text", Text: err.Error()}}, IsError: true}, nil
	}
	if err := checkTaskSupport(spec, req); err != nil {
		return nil, err
	}
	tasked := req.task != taskNone && spec.TaskSupport != signals.TaskForbidden
	if !tasked && spec.CanSuspend && !req.caps.elicitationForm() {
		// A blocking call could not carry the run's questions back.
		return nil, errMissingCapability(
			fmt.Sprintf("tool %q may ask for input while it runs: call it as a task (declare the Tasks extension %q), or declare the client capability elicitation so that its questions are asked during the call", req.name, ExtensionTasks),
			map[string]any{"elicitation": map[string]any{}})
	}
	digest, err := requeststate.Digest(args)
	if err != nil {
		return nil, errInvalidParams(fmt.Sprintf("tool %q: %v", req.name, err))
	}
	call := &blockingCall{tool: t, caller: caller, claim: req.claim, exchange: req.exchange, caps: req.caps,
		digest: digest, asker: req.asker, notify: req.notify, elicit: elicit && !tasked, progressToken: req.progressToken}
	if req.requestState != "" && !tasked {
		return m.continueRun(ctx, call, req.requestState, req.inputResponses)
	}
	inputs, early, err := m.preRunInputs(t, req)
	if ir, ok := early.(*inputRequiredResult); ok && call.elicit {
		if req.inputResponses, err = m.askPreRun(ctx, req.asker, req.inputResponses, ir); err != nil {
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
	if tasked {
		return &taskCreated{snap: snap}, nil
	}
	call.runID = snap.RunID
	return m.await(ctx, call)
}

// lookupTool finds the tool a call names, as the caller's tenant sees the
// catalog: a tool it may not see is unknown, and one whose scopes the
// caller's token lacks is refused (scopeRefusal).
func (m *Mount) lookupTool(ctx context.Context, caller signals.Subject, name string) (*catalog.Tool, error) {
	t, err := catalog.LookupForCall(ctx, m.catalog, name)
	var unav *catalog.UnavailableError
	switch {
	case errors.As(err, &unav):
		if !unav.Visible(caller.Tenant) {
			return nil, errInvalidParams(fmt.Sprintf("unknown tool %q", name))
		}
		return nil, errUnavailable(unav)
	case errors.Is(err, catalog.ErrUnknownTool):
		return nil, errInvalidParams(fmt.Sprintf("unknown tool %q", name))
	case err != nil:
		m.log.Error("read the tool catalog", zap.Error(err))
		return nil, errInternal()
	}
	if !t.Spec().VisibleTo(caller.Tenant) {
		return nil, errInvalidParams(fmt.Sprintf("unknown tool %q", name))
	}
	if refusal := m.scopeRefusal(caller, t.Spec()); refusal != nil {
		return nil, errInsufficientScope(refusal)
	}
	return t, nil
}

// checkTaskSupport refuses a call the tool's task support does not allow.
func checkTaskSupport(spec signals.ToolSpec, req *callRequest) error {
	switch {
	case req.task == taskWanted && spec.TaskSupport == signals.TaskForbidden:
		return &taskRefusal{tool: spec.Name, forbidden: true}
	case spec.TaskSupport == signals.TaskRequired && req.task != taskWanted && (req.task == taskNone || req.mustAskForTask):
		return &taskRefusal{tool: spec.Name}
	}
	return nil
}

// startRun starts the call's run once admission control let it: from then
// until its whole response is sent, the request owns the run.
func (m *Mount) startRun(ctx context.Context, call *blockingCall, args json.RawMessage, inputs map[string]json.RawMessage, tasked bool) (signals.Snapshot, error) {
	need := admission.NeedStart
	if !tasked {
		need |= admission.NeedWait
	}
	ticket, err := m.admit(call.exchange, call.caller.Tenant, need)
	if err != nil {
		return signals.Snapshot{}, err
	}
	defer ticket.Done()
	spec := call.tool.Spec()
	snap, err := m.runs.Start(ctx, runs.StartRequest{
		Tool:         spec,
		Arguments:    args,
		Caller:       call.caller,
		Transport:    signals.TransportMCP,
		PreRunInputs: inputs,
	})
	ticket.Started()
	if err != nil {
		m.log.Error("start run", zap.String(telemetry.FieldTool, spec.Name), zap.String(telemetry.FieldTenant, call.caller.Tenant),
			zap.String(telemetry.FieldTraceID, telemetry.TraceID(ctx)), zap.Error(err))
		if errors.Is(err, runs.ErrSearchAttributesMissing) {
			// A setup fault the operator must fix; the message says how.
			return signals.Snapshot{}, &jsonrpc.Error{Code: codeInternalError, Message: err.Error()}
		}
		return signals.Snapshot{}, errInternal()
	}
	// If the client is already gone, Own cancels the run at once.
	if call.claim != nil {
		call.claim.Own(call.caller, snap.RunID, telemetry.RunFields(ctx, snap.RunID, spec.Name)...)
	} else {
		m.runs.Release(snap.RunID) // no transport tracks this request
	}
	m.annotate(ctx, snap.RunID, spec.Name)
	if m.afterStart != nil {
		m.afterStart(snap.RunID)
	}
	return snap, nil
}

// rpcFailure reports whether the run failed with a JSON-RPC error raised
// for the call (task status failed) rather than a tool error.
func rpcFailure(s signals.Snapshot) bool {
	return s.Status == signals.StatusFailed && s.Error != nil && s.Error.RPCCode != 0
}

// preRunInputs handles a tool's pre-run input requests (MRTR before any run
// exists). It returns the answers to start the run with, or an early result
// (InputRequiredResult for missing answers, an error result for a declined
// request) when no run must start.
func (m *Mount) preRunInputs(t *catalog.Tool, req *callRequest) (map[string]json.RawMessage, mcp.Result, error) {
	spec := t.Spec()
	if len(spec.PreRunInputs) == 0 {
		return nil, nil, nil
	}
	answers := make(map[string]json.RawMessage, len(spec.PreRunInputs))
	missing := map[string]inputRequest{}
	for _, in := range spec.PreRunInputs {
		resp, ok := req.inputResponses[in.Key].(*mcp.ElicitResult)
		if !ok {
			schema := in.Schema
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			missing[in.Key] = inputRequest{
				Method: "elicitation/create",
				Params: elicitParams{Mode: "form", Message: in.Message, RequestedSchema: schema},
			}
			continue
		}
		switch resp.Action {
		case "accept":
		case "decline", "cancel":
			return nil, &toolResult{
				Content: []content{{Type: "text", Text: fmt.Sprintf("input %q was %sed; the tool did not run", in.Key, resp.Action)}},
				IsError: true,
			}, nil
		default:
			return nil, nil, errInvalidParams(fmt.Sprintf("inputResponses[%q]: unknown action %q", in.Key, resp.Action))
		}
		answer, err := json.Marshal(resp.Content)
		if err != nil || resp.Content == nil {
			answer = json.RawMessage("{}")
		}
		if answer, err = t.ValidateInput(in.Key, answer); err != nil {
			return nil, nil, errInvalidParams(fmt.Sprintf("inputResponses[%q]: invalid content: %v", in.Key, catalog.Problem(err)))
		}
		answers[in.Key] = answer
	}
	if len(missing) == 0 {
		return answers, nil, nil
	}
	if !req.caps.elicitationForm() {
		keys := make([]string, 0, len(missing))
		for k := range missing {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, nil, errMissingCapability(
			fmt.Sprintf("tool %q asks for input %v before it runs, which requires the client capability elicitation", spec.Name, keys),
			map[string]any{"elicitation": map[string]any{}})
	}
	if m.metrics != nil {
		m.metrics.MRTRRound()
	}
	return nil, &inputRequiredResult{InputRequests: missing}, nil
}
