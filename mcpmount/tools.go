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

// callOptions are what the transport and the session tell callTool about
// a tools/call beyond its params.
type callOptions struct {
	// legacyTask: a session-era request that carried params.task (the
	// 2025-11-25 task dialect).
	legacyTask bool
	// version is the request's protocol version.
	version string
}

// callTool answers tools/call. Arguments are validated before anything
// starts: an unknown tool is -32602, arguments the tool refuses are a
// CallToolResult with isError naming the property and the rule. A request
// that declared the Tasks extension gets a CreateTaskResult once the run
// exists (unless the tool forbids tasks), as does, in the 2025-11-25
// dialect's shape, a session-era request with params.task; any other
// request waits for the run to end and gets its CallToolResult.
func (m *Mount) callTool(ctx context.Context, req *mcp.CallToolRequest, claim *ownership.Claim, o callOptions) (mcp.Result, error) {
	p := req.Params
	caller, err := m.caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := m.catalog.Lookup(ctx, p.Name)
	var unav *catalog.UnavailableError
	switch {
	case errors.As(err, &unav):
		if !unav.Visible(caller.Tenant) {
			return nil, errInvalidParams(fmt.Sprintf("unknown tool %q", p.Name))
		}
		return nil, errInvalidParams(unav.Error())
	case errors.Is(err, catalog.ErrUnknownTool):
		return nil, errInvalidParams(fmt.Sprintf("unknown tool %q", p.Name))
	case err != nil:
		m.log.Error("read the tool catalog", zap.Error(err))
		return nil, errInternal()
	}
	spec := t.Spec()
	if !spec.VisibleTo(caller.Tenant) {
		return nil, errInvalidParams(fmt.Sprintf("unknown tool %q", p.Name))
	}
	caps := capsFromMeta(p.Meta)
	modern := modernMeta(p.Meta)
	// A session-era client that declared elicitation in its session is
	// asked the run's questions by elicitation/create during the call.
	elicit := !modern && sessionElicits(req.Session)
	if elicit {
		caps.Elicitation = &elicitationCaps{Form: json.RawMessage(`{}`)}
	}
	args, err := t.ValidateArguments(p.Arguments)
	if hc := m.httpCall(claim); hc != nil && hc.argumentsProblem != nil {
		perr := hc.argumentsProblem
		err = &catalog.ArgumentsError{Tool: spec.Name, Problem: "invalid arguments: " + perr.Error(), Err: perr}
	}
	if err != nil {
		// A tool-input error is a tool result the model can act on
		// (SEP-1303), not a protocol error; no run starts.
		return completeResult(&toolResult{Content: []content{{Type: "text", Text: err.Error()}}, IsError: true}, modern), nil
	}
	legacyTask := o.legacyTask && !modern
	switch {
	case legacyTask && spec.TaskSupport == signals.TaskForbidden:
		return nil, &jsonrpc.Error{Code: codeMethodNotFound,
			Message: fmt.Sprintf("tool %q does not run as a task: call it without params.task", p.Name)}
	case spec.TaskSupport == signals.TaskRequired && !modern && !legacyTask && o.version == dialectVersion:
		return nil, &jsonrpc.Error{Code: codeMethodNotFound,
			Message: fmt.Sprintf("tool %q runs only as a task: call it with params.task", p.Name)}
	case spec.TaskSupport == signals.TaskRequired && !caps.tasks() && !legacyTask:
		return nil, errTasksExtensionRequired(fmt.Sprintf("tool %q runs only as a task; it", p.Name))
	}
	tasked := (caps.tasks() || legacyTask) && spec.TaskSupport != signals.TaskForbidden
	if !tasked && spec.CanSuspend && !caps.elicitationForm() {
		// A blocking call could not carry the run's questions back.
		return nil, errMissingCapability(
			fmt.Sprintf("tool %q may ask for input while it runs, which a call without a task requires the client capability elicitation for", p.Name),
			map[string]any{"elicitation": map[string]any{}})
	}
	digest, err := requeststate.Digest(args)
	if err != nil {
		return nil, errInvalidParams(fmt.Sprintf("tool %q: %v", p.Name, err))
	}
	call := &blockingCall{tool: t, caller: caller, claim: claim, caps: caps, modern: modern, digest: digest,
		session: req.Session, elicit: elicit && !tasked, progressToken: p.GetProgressToken()}
	if p.RequestState != "" && !tasked {
		return m.continueRun(ctx, call, p.RequestState, p.InputResponses)
	}
	inputs, early, err := m.preRunInputs(t, p, caps, modern)
	if ir, ok := early.(*inputRequiredResult); ok && call.elicit {
		if p, err = m.elicitPreRun(ctx, req.Session, p, ir); err != nil {
			return nil, err
		}
		inputs, early, err = m.preRunInputs(t, p, caps, modern)
	}
	if early != nil || err != nil {
		return early, err
	}

	need := admission.NeedStart
	if !tasked {
		need |= admission.NeedWait
	}
	ticket, err := m.admit(claim, caller.Tenant, need)
	if err != nil {
		return nil, err
	}
	defer ticket.Done()
	snap, err := m.runs.Start(ctx, runs.StartRequest{
		Tool:         spec,
		Arguments:    args,
		Caller:       caller,
		Transport:    signals.TransportMCP,
		PreRunInputs: inputs,
	})
	ticket.Started()
	if err != nil {
		m.log.Error("start run", zap.String(telemetry.FieldTool, spec.Name), zap.String(telemetry.FieldTenant, caller.Tenant),
			zap.String(telemetry.FieldTraceID, telemetry.TraceID(ctx)), zap.Error(err))
		if errors.Is(err, runs.ErrSearchAttributesMissing) {
			// A setup fault the operator must fix; the message says how.
			return nil, &jsonrpc.Error{Code: codeInternalError, Message: err.Error()}
		}
		return nil, errInternal()
	}
	// From here until its whole response is sent, this request owns the
	// run: if the client is already gone, Own cancels it at once.
	if claim != nil {
		claim.Own(caller, snap.RunID, telemetry.RunFields(ctx, snap.RunID, spec.Name)...)
	} else {
		m.runs.Release(snap.RunID) // no transport tracks this request
	}
	m.annotate(ctx, snap.RunID, spec.Name)
	if m.afterStart != nil {
		m.afterStart(snap.RunID)
	}

	if legacyTask {
		return &legacyCreateTaskResult{Task: m.proj.legacyTask(snap)}, nil
	}
	if tasked {
		if snap.Status.Terminal() && !rpcFailure(snap) {
			return completeResult(runResult(snap), modern), nil
		}
		return m.proj.createTask(snap), nil
	}
	call.runID = snap.RunID
	return m.await(ctx, call)
}

// rpcFailure reports whether the run failed with a JSON-RPC error raised
// for the call (task status failed) rather than a tool error.
func rpcFailure(s signals.Snapshot) bool {
	return s.Status == signals.StatusFailed && s.Error != nil && s.Error.RPCCode != 0
}

// completeResult labels a CallToolResult for a 2026-07-28 request.
func completeResult(r *toolResult, modern bool) *toolResult {
	if modern {
		r.ResultType = resultComplete
	}
	return r
}

// preRunInputs handles a tool's pre-run input requests (MRTR before any run
// exists). It returns the answers to start the run with, or an early result
// (InputRequiredResult for missing answers, an error result for a declined
// request) when no run must start.
func (m *Mount) preRunInputs(t *catalog.Tool, p *mcp.CallToolParamsRaw, caps clientCaps, modern bool) (map[string]json.RawMessage, mcp.Result, error) {
	spec := t.Spec()
	if len(spec.PreRunInputs) == 0 {
		return nil, nil, nil
	}
	answers := make(map[string]json.RawMessage, len(spec.PreRunInputs))
	missing := map[string]inputRequest{}
	for _, in := range spec.PreRunInputs {
		resp, ok := p.InputResponses[in.Key].(*mcp.ElicitResult)
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
			return nil, completeResult(&toolResult{
				Content: []content{{Type: "text", Text: fmt.Sprintf("input %q was %sed; the tool did not run", in.Key, resp.Action)}},
				IsError: true,
			}, modern), nil
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
	if !caps.elicitationForm() {
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
	return nil, &inputRequiredResult{ResultType: resultInputRequired, InputRequests: missing}, nil
}
