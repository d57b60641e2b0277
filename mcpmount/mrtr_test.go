package mcpmount

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/signals"
)

// These tests prove MRTR for task-less clients (wire reference §1.7,
// openwop-mount.md §3) against real suspending workflows: a run that asks
// for input during a blocking call is answered InputRequiredResult, and
// the retry resolves the interrupt and owns the run again.

// elicitCaps declares form elicitation and no Tasks extension.
func elicitCaps() map[string]any { return map[string]any{"elicitation": map[string]any{}} }

// inputRequired checks an InputRequiredResult and returns its request keys
// (sorted) and its requestState.
func inputRequired(t *testing.T, r rpc) ([]string, string) {
	t.Helper()
	res := wantResult(t, r)
	reqs, _ := res["inputRequests"].(map[string]any)
	state, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || len(reqs) == 0 || state == "" {
		t.Fatalf("want an InputRequiredResult, got %s", r.Raw)
	}
	var keys []string
	for k, v := range reqs {
		keys = append(keys, k)
		req, _ := v.(map[string]any)
		if req["method"] != "elicitation/create" {
			t.Fatalf("inputRequests[%q] = %v", k, v)
		}
	}
	sort.Strings(keys)
	return keys, state
}

// retryParams is the MRTR retry of a tools/call: the same name and
// arguments plus inputResponses and requestState.
func retryParams(name string, args map[string]any, responses map[string]any, state string) map[string]any {
	return map[string]any{"name": name, "arguments": args, "inputResponses": responses, "requestState": state}
}

func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

// wantInvalidState fails unless r is -32602 about the requestState.
func wantInvalidState(t *testing.T, r rpc, what string) {
	t.Helper()
	if r.Error == nil || r.Error.Code != wire.CodeInvalidParams || !strings.Contains(r.Error.Message, "requestState") {
		t.Fatalf("%s requestState: want -32602 naming requestState, got HTTP %d %s", what, r.Status, r.Raw)
	}
	if !strings.Contains(r.Error.Message, what) {
		t.Fatalf("%s requestState: the message does not say why: %q", what, r.Error.Message)
	}
}

// TestMRTRRoundTrip: confirm_delete called without a task asks its question
// as an InputRequiredResult keyed by the raw interruptId. Retries with a
// tampered state, other arguments or another principal's credential are
// refused with -32602 (and do not use the state up); the genuine retry
// completes the run; replaying the used state is refused.
func TestMRTRRoundTrip(t *testing.T) {
	var p *probe
	s := newStackWith(t, keysFor(t, "ka=acme:alice,kb=acme:bob,kg=globex:carol"), "", withProbe(&p, nil))
	alice := s.client(t, "ka", elicitCaps())
	args := map[string]any{"filename": "a.txt"}
	keys, state := inputRequired(t, alice.call("tools/call", map[string]any{"name": "confirm_delete", "arguments": args}, nil))
	runID := p.next(t)
	// Reads need only the tenant; the owner is the subject key ka names.
	snap, err := s.runs.Get(context.Background(), signals.Subject{Tenant: "acme"}, runID)
	if err != nil {
		t.Fatal(err)
	}
	aliceSubj := snap.Owner.Subject
	if aliceSubj.SubjectID != "alice" {
		t.Fatalf("owner = %+v", snap.Owner)
	}
	if len(keys) != 1 || len(snap.Interrupts) != 1 || keys[0] != snap.Interrupts[0].ID ||
		!strings.HasPrefix(keys[0], runID+"-i") || strings.Contains(keys[0], "~") {
		t.Fatalf("inputRequests keys %v, want the raw interruptId of run %s (%+v)", keys, runID, snap.Interrupts)
	}
	answer := map[string]any{keys[0]: accept(map[string]any{"confirm": true})}

	// Tampered: one character of the signature changed.
	tampered := []byte(state)
	if tampered[len(tampered)-1] == 'A' {
		tampered[len(tampered)-1] = 'B'
	} else {
		tampered[len(tampered)-1] = 'A'
	}
	wantInvalidState(t, alice.call("tools/call", retryParams("confirm_delete", args, answer, string(tampered)), nil), "failed verification")
	// Tampered body with the original signature.
	body, sig, _ := strings.Cut(state, ".")
	wantInvalidState(t, alice.call("tools/call", retryParams("confirm_delete", args, answer, body+"x."+sig), nil), "")
	// Foreign: other arguments, another subject of the tenant, another tenant.
	wantInvalidState(t, alice.call("tools/call", retryParams("confirm_delete", map[string]any{"filename": "b.txt"}, answer, state), nil), "another request")
	bob := s.client(t, "kb", elicitCaps())
	wantInvalidState(t, bob.call("tools/call", retryParams("confirm_delete", args, answer, state), nil), "another request")
	carol := s.client(t, "kg", elicitCaps())
	wantInvalidState(t, carol.call("tools/call", retryParams("confirm_delete", args, answer, state), nil), "another request")
	if snap, _ := s.runs.Get(context.Background(), aliceSubj, runID); len(snap.Interrupts) != 1 || len(snap.Resolved) != 0 {
		t.Fatalf("a refused retry changed the run: %+v", snap)
	}

	// The genuine retry (new id, same tool and arguments) completes it.
	res := wantResult(t, alice.call("tools/call", retryParams("confirm_delete", args, answer, state), nil))
	if res["resultType"] != "complete" || res["isError"] != false || text(t, res) != "Deleted a.txt." {
		t.Fatalf("retry = %v", res)
	}
	if snap := s.awaitEnd(t, aliceSubj, runID, 10*time.Second); snap.Status != signals.StatusCompleted {
		t.Fatalf("run = %s", snap.Status)
	}
	// Replayed after success.
	wantInvalidState(t, alice.call("tools/call", retryParams("confirm_delete", args, answer, state), nil), "already used")
	if n := len(p.started); n != 0 {
		t.Fatalf("%d more runs were started by retries", n)
	}
}

// TestMRTRExpiredState: a requestState past its lifetime is refused with
// -32602 and the run is left as it was.
func TestMRTRExpiredState(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, func(o *Options) { o.MRTRStateTTL = time.Second }))
	c := s.client(t, "", elicitCaps())
	args := map[string]any{"filename": "old.txt"}
	keys, state := inputRequired(t, c.call("tools/call", map[string]any{"name": "confirm_delete", "arguments": args}, nil))
	runID := p.next(t)
	// Expiry is second-granular: two seconds are past any 1 s state.
	time.Sleep(2100 * time.Millisecond)
	answer := map[string]any{keys[0]: accept(map[string]any{"confirm": true})}
	wantInvalidState(t, c.call("tools/call", retryParams("confirm_delete", args, answer, state), nil), "expired")
	snap, err := s.runs.Get(context.Background(), auth.Anonymous(), runID)
	if err != nil || snap.Status.Terminal() || len(snap.Resolved) != 0 {
		t.Fatalf("run after the refused retry = %+v, %v", snap, err)
	}
	if _, err := s.runs.Cancel(context.Background(), auth.Anonymous(), runID, ""); err != nil {
		t.Fatal(err)
	}
}

// TestMRTRMultipleRounds: multi_input asks two questions; a retry that
// answers one gets a new InputRequiredResult for the other (round 2), whose
// retry completes the run.
func TestMRTRMultipleRounds(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	c := s.client(t, "", elicitCaps())
	args := map[string]any{}
	keys, state1 := inputRequired(t, c.call("tools/call", map[string]any{"name": "multi_input", "arguments": args}, nil))
	if len(keys) != 2 {
		t.Fatalf("round 1 keys = %v", keys)
	}
	answers := map[string]any{
		keys[0]: accept(map[string]any{"name": "Ada"}), keys[1]: accept(map[string]any{"color": "teal"}),
	}
	// The run asks name (i1) first, then colour (i2).
	keys2, state2 := inputRequired(t, c.call("tools/call",
		retryParams("multi_input", args, map[string]any{keys[0]: answers[keys[0]]}, state1), nil))
	if len(keys2) != 1 || keys2[0] != keys[1] || state2 == state1 {
		t.Fatalf("round 2 keys = %v (round 1 %v)", keys2, keys)
	}
	res := wantResult(t, c.call("tools/call", retryParams("multi_input", args, map[string]any{keys[1]: answers[keys[1]]}, state2), nil))
	if res["isError"] != false || text(t, res) != "Hello Ada, your favourite colour is teal." {
		t.Fatalf("round 3 = %v", res)
	}
	if snap := s.awaitEnd(t, auth.Anonymous(), p.next(t), 10*time.Second); snap.Status != signals.StatusCompleted {
		t.Fatalf("run = %s", snap.Status)
	}
}

// TestMRTRRoundCap: with MRTRMaxRounds 1, a retry after which the run asks
// again is answered isError mcp_mrtr_rounds_exceeded and the run is
// cancelled.
func TestMRTRRoundCap(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, func(o *Options) { o.MRTRMaxRounds = 1 }))
	c := s.client(t, "", elicitCaps())
	keys, state := inputRequired(t, c.call("tools/call", map[string]any{"name": "multi_input", "arguments": map[string]any{}}, nil))
	runID := p.next(t)
	res := wantResult(t, c.call("tools/call", retryParams("multi_input", map[string]any{},
		map[string]any{keys[0]: accept(map[string]any{"name": "Ada"})}, state), nil))
	if res["isError"] != true || res["resultType"] != "complete" || !strings.Contains(text(t, res), "mcp_mrtr_rounds_exceeded") {
		t.Fatalf("retry past the cap = %v", res)
	}
	snap := s.awaitEnd(t, auth.Anonymous(), runID, 20*time.Second)
	if snap.Status != signals.StatusCancelled || snap.CancelReason != "mcp-mrtr-rounds-exceeded" {
		t.Fatalf("run = %s (reason %q)", snap.Status, snap.CancelReason)
	}
}

// TestMRTRNeedsElicitation: a tool that can suspend, called without a task
// by a client that did not declare elicitation, is refused with -32021
// naming elicitation, and no run starts.
func TestMRTRNeedsElicitation(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, func(o *Options) { o.NoCompanionTools = true }))
	c := s.client(t, "", map[string]any{})
	for _, tool := range []string{"confirm_delete", "multi_input", "conformance-approval"} {
		args := map[string]any{}
		if tool == "confirm_delete" {
			args["filename"] = "a.txt"
		}
		r := c.call("tools/call", map[string]any{"name": tool, "arguments": args}, nil)
		if r.Error == nil || r.Error.Code != wire.CodeMissingCapability {
			t.Fatalf("%s without elicitation: want -32021, got HTTP %d %s", tool, r.Status, r.Raw)
		}
		var data struct {
			RequiredCapabilities map[string]json.RawMessage `json:"requiredCapabilities"`
		}
		if err := json.Unmarshal(r.Error.Data, &data); err != nil || data.RequiredCapabilities["elicitation"] == nil {
			t.Fatalf("%s: data = %s (%v)", tool, r.Error.Data, err)
		}
	}
	if n := len(p.started); n != 0 {
		t.Fatalf("%d runs started for refused calls", n)
	}
}

// TestMRTRRetryDisconnectCancels: the retry continues the run and owns it
// until its response is sent. Here the retry answers one of multi_input's
// two questions, and its client leaves before the answer (the probe holds
// the retry's wait until the server has noticed): the interrupt was
// resolved, and the run is then cancelled with mcp-request-cancelled.
func TestMRTRRetryDisconnectCancels(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	c := s.client(t, "", elicitCaps())
	keys, state := inputRequired(t, c.call("tools/call", map[string]any{"name": "multi_input", "arguments": map[string]any{}}, nil))
	runID := p.next(t)
	p.mu.Lock()
	p.holdAwaits = 1
	p.mu.Unlock()
	retry := wireCall{id: 2, method: "tools/call", caps: elicitCaps(), params: retryParams("multi_input", map[string]any{},
		map[string]any{keys[0]: accept(map[string]any{"name": "Ada"})}, state)}
	conn := dialCall(t, s.addr(), retry)
	if held := p.nextHeld(t); held != runID {
		t.Fatalf("held %s, want %s", held, runID)
	}
	conn.Close()
	snap := s.awaitEnd(t, auth.Anonymous(), runID, 20*time.Second)
	wantCancelledByRequest(t, snap)
	if _, ok := snap.ResolvedBy(keys[0]); !ok {
		t.Fatalf("the retry's answer was not applied before the disconnect: %+v", snap.Resolved)
	}
}
