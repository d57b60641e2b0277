package mcpmount

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// callTool answers tools/call. Arguments are validated before anything
// starts. A request that declared the Tasks extension gets a CreateTaskResult
// once the run exists (unless the tool forbids tasks); any other request
// waits for the run to end and gets its CallToolResult.
func (m *Mount) callTool(ctx context.Context, p *mcp.CallToolParamsRaw) (mcp.Result, error) {
	caller, err := m.caller(ctx)
	if err != nil {
		return nil, err
	}
	t, ok := m.tools[p.Name]
	if !ok || !t.spec.VisibleTo(caller.Tenant) {
		return nil, errInvalidParams(fmt.Sprintf("unknown tool %q", p.Name))
	}
	args, err := t.validateArguments(p.Arguments)
	if err != nil {
		return nil, err
	}
	caps := capsFromMeta(p.Meta)
	modern := modernMeta(p.Meta)
	if t.spec.TaskSupport == signals.TaskRequired && !caps.tasks() {
		return nil, errTasksExtensionRequired(fmt.Sprintf("tool %q runs only as a task; it", p.Name))
	}
	inputs, early, err := m.preRunInputs(t, p, caps, modern)
	if early != nil || err != nil {
		return early, err
	}

	snap, err := m.runs.Start(ctx, runs.StartRequest{
		Tool:         t.spec.Name,
		Arguments:    args,
		Caller:       caller,
		Transport:    signals.TransportMCP,
		PreRunInputs: inputs,
	})
	if err != nil {
		m.log.Error("start run", zap.String("tool", t.spec.Name), zap.Error(err))
		return nil, errInternal()
	}
	// From here until its whole response is sent, this request owns the run.
	own := ownershipFrom(ctx)
	if own != nil {
		own.own(caller, snap.RunID)
	}

	if caps.tasks() && t.spec.TaskSupport != signals.TaskForbidden {
		if snap.Status.Terminal() && !rpcFailure(snap) {
			return completeResult(runResult(snap), modern), nil
		}
		return m.proj.createTask(snap), nil
	}

	// Blocking: the request waits for the run's end, or for its client to
	// leave.
	if own != nil {
		var stop context.CancelFunc
		ctx, stop = own.bind(ctx)
		defer stop()
	}
	final, err := m.runs.Await(ctx, caller, snap.RunID, func(s signals.Snapshot) bool { return s.Status.Terminal() })
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		m.log.Error("await run", zap.String("runId", snap.RunID), zap.Error(err))
		return nil, errInternal()
	}
	if rpcFailure(final) {
		return nil, &jsonrpc.Error{Code: int64(final.Error.RPCCode), Message: final.Error.Message}
	}
	return completeResult(runResult(final), modern), nil
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

// validateArguments checks the arguments against the tool's input schema
// and returns them as a JSON object.
func (t *tool) validateArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, errInvalidParams(fmt.Sprintf("tool %q: arguments are not valid JSON: %v", t.spec.Name, err))
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errInvalidParams(fmt.Sprintf("tool %q: arguments must be a JSON object", t.spec.Name))
	}
	if err := t.args.Validate(v); err != nil {
		return nil, errInvalidParams(fmt.Sprintf("tool %q: invalid arguments: %v", t.spec.Name, err))
	}
	return raw, nil
}

// preRunInputs handles a tool's pre-run input requests (MRTR before any run
// exists). It returns the answers to start the run with, or an early result
// (InputRequiredResult for missing answers, an error result for a declined
// request) when no run must start.
func (m *Mount) preRunInputs(t *tool, p *mcp.CallToolParamsRaw, caps clientCaps, modern bool) (map[string]json.RawMessage, mcp.Result, error) {
	if len(t.spec.PreRunInputs) == 0 {
		return nil, nil, nil
	}
	answers := make(map[string]json.RawMessage, len(t.spec.PreRunInputs))
	missing := map[string]inputRequest{}
	for _, in := range t.spec.PreRunInputs {
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
		var v any
		_ = json.Unmarshal(answer, &v)
		if err := t.inputs[in.Key].Validate(v); err != nil {
			return nil, nil, errInvalidParams(fmt.Sprintf("inputResponses[%q]: invalid content: %v", in.Key, err))
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
			fmt.Sprintf("tool %q asks for input %v before it runs, which requires the client capability elicitation", t.spec.Name, keys),
			map[string]any{"elicitation": map[string]any{}})
	}
	return nil, &inputRequiredResult{ResultType: resultInputRequired, InputRequests: missing}, nil
}
