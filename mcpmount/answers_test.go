package mcpmount

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/signals"
)

// These tests prove on the wire, against real workflows on the embedded
// Temporal server, that an answer outside its question is refused where it
// enters, in every entry path: tasks/update, the MRTR retry, a session-dialect
// elicitation/create response and the 2025-11-25 tasks/result.
// The question stays open, the run never sees the answer, and a valid
// answer then completes the run. (REST: restapi's TestIntegrationRefusedAnswers.)

// badAnswer is one answer that does not fit its question.
type badAnswer struct {
	name    string
	tool    string
	args    map[string]any
	bad     map[string]any // the accepted content that does not fit
	rule    string         // what the refusal's message names
	good    map[string]any // the content that fits
	outcome string         // the completed run's result text holds it
}

// badAnswers are the three ways an answer misses its question: a value of
// the wrong type, a missing required property, an action not offered.
func badAnswers() []badAnswer {
	del := map[string]any{"filename": "a.txt"}
	return []badAnswer{
		{"wrong type", "confirm_delete", del, map[string]any{"confirm": "yes"}, "boolean",
			map[string]any{"confirm": true}, "Deleted a.txt."},
		{"missing required", "confirm_delete", del, map[string]any{}, "required",
			map[string]any{"confirm": true}, "Deleted a.txt."},
		{"action not offered", "conformance-approval", map[string]any{}, map[string]any{"action": "maybe"}, `"maybe" is not offered`,
			map[string]any{"action": "accept"}, `"approved":true`},
	}
}

// wantRefusal fails unless r is the -32602 refusal (HTTP 400) of the
// answer to key, naming the key and the rule.
func wantRefusal(t *testing.T, r rpc, key, rule string) {
	t.Helper()
	if r.Status != http.StatusBadRequest || r.Error == nil || r.Error.Code != wire.CodeInvalidParams {
		t.Fatalf("want HTTP 400 -32602, got HTTP %d %s", r.Status, r.Raw)
	}
	if !strings.Contains(r.Error.Message, key) || !strings.Contains(r.Error.Message, rule) {
		t.Fatalf("refusal %q does not name the input %q and the rule %q", r.Error.Message, key, rule)
	}
}

// wantUnanswered fails unless the run still has interrupt key open and
// neither its snapshot nor its event log holds a resolution.
func wantUnanswered(t *testing.T, s *stack, caller signals.Subject, runID, key string) {
	t.Helper()
	ctx := context.Background()
	snap, err := s.runs.Get(ctx, caller, runID)
	if err != nil {
		t.Fatal(err)
	}
	if _, open := snap.Interrupt(key); !open || len(snap.Resolved) != 0 || snap.Status.Terminal() {
		t.Fatalf("after a refused answer the run is %s, open %+v, resolved %+v", snap.Status, snap.Interrupts, snap.Resolved)
	}
	page, _, err := s.runs.Events(ctx, caller, runID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Events {
		if e.Type == signals.EventInterruptResolved {
			t.Fatalf("the run saw a refused answer: %+v", e)
		}
	}
}

// runOfKey is the run an interrupt id belongs to ("<runId>-i<n>").
func runOfKey(t *testing.T, key string) string {
	t.Helper()
	i := strings.LastIndex(key, "-i")
	if i <= 0 {
		t.Fatalf("interrupt id %q names no run", key)
	}
	return key[:i]
}

// TestRefusedAnswerTasksUpdate: tasks/update of a 2026-07-28 task.
func TestRefusedAnswerTasksUpdate(t *testing.T) {
	s := newStack(t, nil, "")
	for _, tt := range badAnswers() {
		t.Run(tt.name, func(t *testing.T) {
			c := s.client(t, "", tasksCaps())
			id := callTool(t, c, tt.tool, tt.args)["taskId"].(string)
			res := waitTask(t, c, id, status("input_required"))
			var key string
			for k := range res["inputRequests"].(map[string]any) {
				key = k
			}
			bad := map[string]any{"taskId": id, "inputResponses": map[string]any{key: accept(tt.bad)}}
			wantRefusal(t, c.call("tasks/update", bad, nil), key, tt.rule)
			got := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil))
			if reqs, _ := got["inputRequests"].(map[string]any); got["status"] != "input_required" || reqs[key] == nil {
				t.Fatalf("after the refusal tasks/get = %v, want the question still open", got)
			}
			wantUnanswered(t, s, auth.Anonymous(), runOf(t, id), key)
			wantResult(t, c.call("tasks/update", map[string]any{"taskId": id,
				"inputResponses": map[string]any{key: accept(tt.good)}}, nil))
			done := waitTask(t, c, id, status("completed"))
			if got := resultOf(t, done["result"]); !strings.Contains(got, tt.outcome) {
				t.Fatalf("result %q, want %q", got, tt.outcome)
			}
		})
	}
}

// resultOf is a result's text, or its structured content as JSON.
func resultOf(t *testing.T, result any) string {
	t.Helper()
	r, _ := result.(map[string]any)
	if sc, ok := r["structuredContent"]; ok {
		b, _ := json.Marshal(sc)
		return string(b)
	}
	return text(t, result)
}

// TestRefusedAnswerMRTR: the inputResponses of an MRTR retry. The refused
// retry leaves the requestState usable: the next retry with a valid
// answer and the same state completes the run.
func TestRefusedAnswerMRTR(t *testing.T) {
	s := newStack(t, nil, "")
	for _, tt := range badAnswers() {
		t.Run(tt.name, func(t *testing.T) {
			c := s.client(t, "", elicitCaps())
			keys, state := inputRequired(t, c.call("tools/call", map[string]any{"name": tt.tool, "arguments": tt.args}, nil))
			key := keys[0]
			r := c.call("tools/call", retryParams(tt.tool, tt.args, map[string]any{key: accept(tt.bad)}, state), nil)
			wantRefusal(t, r, key, tt.rule)
			wantUnanswered(t, s, auth.Anonymous(), runOfKey(t, key), key)
			res := wantResult(t, c.call("tools/call", retryParams(tt.tool, tt.args, map[string]any{key: accept(tt.good)}, state), nil))
			if res["resultType"] != "complete" || res["isError"] != false || !strings.Contains(resultOf(t, res), tt.outcome) {
				t.Fatalf("valid retry = %v", res)
			}
		})
	}
}

// stdioSession is a session-dialect client on stdio, driven by hand so that
// it can answer off the schema (the go-sdk client checks its own answers).
type stdioSession struct {
	t    *testing.T
	peer *stdioPeer
	id   int
}

// newStdioSession initializes a session at version that declares
// elicitation.
func newStdioSession(t *testing.T, s *stack, version string) *stdioSession {
	t.Helper()
	ss := &stdioSession{t: t, peer: serveStdio(t, s.mount, auth.Anonymous())}
	ss.request("initialize", map[string]any{"protocolVersion": version,
		"capabilities": map[string]any{"elicitation": map[string]any{}}, "clientInfo": map[string]any{"name": "answers", "version": "0"}})
	if r := ss.peer.response(t); r["result"] == nil {
		t.Fatalf("initialize = %v", r)
	}
	ss.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return ss
}

func (ss *stdioSession) send(v any) {
	ss.t.Helper()
	b, _ := json.Marshal(v)
	ss.peer.send(ss.t, b)
}

// request sends a request and returns its id.
func (ss *stdioSession) request(method string, params map[string]any) int {
	ss.t.Helper()
	ss.id++
	ss.send(map[string]any{"jsonrpc": "2.0", "id": ss.id, "method": method, "params": params})
	return ss.id
}

// call sends a request and returns its response's result.
func (ss *stdioSession) call(method string, params map[string]any) map[string]any {
	ss.t.Helper()
	id := ss.request(method, params)
	r := ss.peer.response(ss.t)
	res, _ := r["result"].(map[string]any)
	if r["id"] != float64(id) || res == nil {
		ss.t.Fatalf("%s = %v", method, r)
	}
	return res
}

// next returns the next message the server sends.
func (ss *stdioSession) next() map[string]any {
	ss.t.Helper()
	select {
	case msg, ok := <-ss.peer.msgs:
		if !ok {
			ss.t.Fatal("stdout ended")
		}
		return msg
	case <-time.After(60 * time.Second):
		ss.t.Fatal("no message on stdout")
	}
	return nil
}

// elicitation waits for the next elicitation/create and returns it.
func (ss *stdioSession) elicitation() map[string]any {
	ss.t.Helper()
	for {
		msg := ss.next()
		if msg["method"] == "elicitation/create" {
			return msg
		}
		if _, notification := msg["method"]; !notification {
			ss.t.Fatalf("want elicitation/create, got %v", msg)
		}
	}
}

// answer answers the elicitation req with content.
func (ss *stdioSession) answer(req map[string]any, content map[string]any) {
	ss.t.Helper()
	ss.send(map[string]any{"jsonrpc": "2.0", "id": req["id"], "result": accept(content)})
}

// wantAskedAgain answers first with tt.bad and fails unless the server
// asks the same question again, saying why the answer was refused, while
// the run still has it open and unanswered. It returns the second
// elicitation.
func wantAskedAgain(t *testing.T, s *stack, ss *stdioSession, runID string, tt badAnswer) map[string]any {
	t.Helper()
	first := ss.elicitation()
	ss.answer(first, tt.bad)
	again := ss.elicitation()
	msg, _ := again["params"].(map[string]any)["message"].(string)
	firstMsg, _ := first["params"].(map[string]any)["message"].(string)
	if !strings.HasPrefix(msg, firstMsg) || !strings.Contains(msg, "the last answer was refused") {
		t.Fatalf("asked again with %q, want %q and why the last answer was refused", msg, firstMsg)
	}
	snap, err := s.runs.Get(context.Background(), auth.Anonymous(), runID)
	if err != nil || len(snap.Interrupts) != 1 {
		t.Fatalf("run = %+v, %v", snap, err)
	}
	wantUnanswered(t, s, auth.Anonymous(), runID, snap.Interrupts[0].ID)
	return again
}

// TestRefusedAnswerSessionElicitation: a session-dialect (2025-06-18) blocking
// call whose client answers the server's elicitation/create off its
// schema is asked again, and its valid answer then completes the call.
func TestRefusedAnswerSessionElicitation(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	for _, tt := range badAnswers() {
		t.Run(tt.name, func(t *testing.T) {
			ss := newStdioSession(t, s, "2025-06-18")
			call := ss.request("tools/call", map[string]any{"name": tt.tool, "arguments": tt.args})
			again := wantAskedAgain(t, s, ss, p.next(t), tt)
			ss.answer(again, tt.good)
			r := ss.peer.response(t)
			res, _ := r["result"].(map[string]any)
			if r["id"] != float64(call) || res == nil || res["isError"] != false || !strings.Contains(resultOf(t, res), tt.outcome) {
				t.Fatalf("tools/call = %v", r)
			}
		})
	}
}

// TestRefusedAnswerDialect: the session dialect's answer path, the
// elicitation/create that tasks/result carries for an input_required task.
// After the refused answer the task still reads input_required.
func TestRefusedAnswerDialect(t *testing.T) {
	s := newStack(t, nil, "")
	for _, tt := range badAnswers() {
		t.Run(tt.name, func(t *testing.T) {
			ss := newStdioSession(t, s, "2025-11-25")
			created := ss.call("tools/call", map[string]any{"name": tt.tool, "arguments": tt.args, "task": map[string]any{}})
			id, _ := created["task"].(map[string]any)["taskId"].(string)
			deadline := time.Now().Add(30 * time.Second)
			for ss.call("tasks/get", map[string]any{"taskId": id})["status"] != "input_required" {
				if time.Now().After(deadline) {
					t.Fatal("the task never became input_required")
				}
				time.Sleep(100 * time.Millisecond)
			}
			result := ss.request("tasks/result", map[string]any{"taskId": id})
			again := wantAskedAgain(t, s, ss, runOf(t, id), tt)
			// tasks/result waits; tasks/get, answered meanwhile, still
			// reads input_required.
			get := ss.request("tasks/get", map[string]any{"taskId": id})
			if r := ss.peer.response(t); r["id"] != float64(get) || r["result"].(map[string]any)["status"] != "input_required" {
				t.Fatalf("tasks/get after the refusal = %v", r)
			}
			ss.answer(again, tt.good)
			r := ss.peer.response(t)
			res, _ := r["result"].(map[string]any)
			if r["id"] != float64(result) || res == nil || !strings.Contains(resultOf(t, res), tt.outcome) || relatedTask(res) != id {
				t.Fatalf("tasks/result = %v", r)
			}
		})
	}
}
