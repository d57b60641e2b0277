package mcpmount

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// These tests run the whole product on the embedded Temporal server: every
// tool is a real workflow on a real worker, and every task operation a
// Temporal query, signal or cancellation.

// waitTask polls tasks/get until want(status) holds or the timeout passes.
func waitTask(t *testing.T, c *client, taskID string, want func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res := wantResult(t, c.call("tasks/get", map[string]any{"taskId": taskID}, nil))
		if want(res) {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s did not reach the wanted state; last %v", taskID, res)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func status(s string) func(map[string]any) bool {
	return func(r map[string]any) bool { return r["status"] == s }
}

func text(t *testing.T, result any) string {
	t.Helper()
	r, _ := result.(map[string]any)
	cs, _ := r["content"].([]any)
	if len(cs) == 0 {
		t.Fatalf("no content in %v", result)
	}
	return cs[0].(map[string]any)["text"].(string)
}

func callTool(t *testing.T, c *client, name string, args map[string]any) map[string]any {
	t.Helper()
	return wantResult(t, c.call("tools/call", map[string]any{"name": name, "arguments": args}, nil))
}

// runOf is the run id (the workflow ID) of an MCP task id.
var runOf = testsupport.RunOf

func TestIntegrationTaskLifecycle(t *testing.T) {
	s := newStack(t, nil, "")
	c := s.client(t, "", tasksCaps())
	ctx := context.Background()

	created := callTool(t, c, "slow_compute", map[string]any{"seconds": 1, "label": "it"})
	if created["resultType"] != "task" || created["ttlMs"] != nil {
		t.Fatalf("create = %v", created)
	}
	id := created["taskId"].(string)
	// Durable create: the run answers at once, and its start metadata is the
	// mount's.
	first := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil))
	if first["taskId"] != id {
		t.Fatalf("immediate tasks/get = %v", first)
	}
	snap, err := s.runs.Get(ctx, auth.Anonymous(), runOf(t, id))
	if err != nil || snap.Transport != signals.TransportMCP || !reflect.DeepEqual(snap.Owner.Subject, auth.Anonymous()) || snap.Tool != "slow_compute" {
		t.Fatalf("run = %+v, %v", snap, err)
	}
	done := waitTask(t, c, id, status("completed"))
	if got := text(t, done["result"]); !strings.Contains(got, `"it"`) || done["result"].(map[string]any)["isError"] != false {
		t.Fatalf("completed = %v", done)
	}

	// A tool error is a completed task with isError.
	failing := callTool(t, c, "failing_job", map[string]any{})
	res := waitTask(t, c, failing["taskId"].(string), status("completed"))
	if res["result"].(map[string]any)["isError"] != true || res["error"] != nil {
		t.Fatalf("failing_job = %v", res)
	}
	// A JSON-RPC error raised for the call is a failed task with error.
	perr := callTool(t, c, "protocol_error_job", map[string]any{})
	res = waitTask(t, c, perr["taskId"].(string), status("failed"))
	e, _ := res["error"].(map[string]any)
	if e["code"] != float64(-32603) || e["message"] == "" || res["result"] != nil {
		t.Fatalf("protocol_error_job = %v", res)
	}

	// Cancel a running task: empty ack, then cancelled with the reason.
	long := callTool(t, c, "slow_compute", map[string]any{"seconds": 60})
	lid := long["taskId"].(string)
	ack := wantResult(t, c.call("tasks/cancel", map[string]any{"taskId": lid}, nil))
	if len(ack) != 2 || ack["resultType"] != "complete" {
		t.Fatalf("cancel ack = %v", ack)
	}
	waitTask(t, c, lid, status("cancelled"))
	snap, err = s.runs.Get(ctx, auth.Anonymous(), runOf(t, lid))
	if err != nil || snap.CancelReason != signals.ReasonCallerRequested {
		t.Fatalf("cancelled run = %+v, %v", snap, err)
	}
	// Cancelling a terminal task acks and appends nothing.
	before := snap.LastSequence
	wantResult(t, c.call("tasks/cancel", map[string]any{"taskId": lid}, nil))
	if snap, _ = s.runs.Get(ctx, auth.Anonymous(), runOf(t, lid)); snap.LastSequence != before || snap.Status != signals.StatusCancelled {
		t.Fatalf("terminal cancel changed the run: %+v", snap)
	}
}

func TestIntegrationTasksGetIsARead(t *testing.T) {
	s := newStack(t, nil, "")
	c := s.client(t, "", tasksCaps())
	id := callTool(t, c, "slow_compute", map[string]any{"seconds": 30})["taskId"].(string)
	t.Cleanup(func() { c.call("tasks/cancel", map[string]any{"taskId": id}, nil) })
	run := runOf(t, id)
	before, err := s.runs.Get(context.Background(), auth.Anonymous(), run)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil))
	}
	after, err := s.runs.Get(context.Background(), auth.Anonymous(), run)
	if err != nil || after.LastSequence != before.LastSequence {
		t.Fatalf("tasks/get appended events: %d -> %d (%v)", before.LastSequence, after.LastSequence, err)
	}
}

func TestIntegrationInputRequests(t *testing.T) {
	s := newStack(t, nil, "")
	c := s.client(t, "", tasksCaps())

	id := callTool(t, c, "confirm_delete", map[string]any{"filename": "a.txt"})["taskId"].(string)
	res := waitTask(t, c, id, status("input_required"))
	reqs := res["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("inputRequests = %v", reqs)
	}
	var key string
	for k := range reqs {
		key = k
	}
	// Keys are raw interrupt ids of this run.
	if !strings.HasPrefix(key, runOf(t, id)) || !runid.Valid(key) {
		t.Fatalf("key %q is not a raw interrupt id of %s", key, runOf(t, id))
	}
	req := reqs[key].(map[string]any)
	if req["method"] != "elicitation/create" || req["params"].(map[string]any)["mode"] != "form" {
		t.Fatalf("request = %v", req)
	}
	ack := wantResult(t, c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, nil))
	if len(ack) != 2 || ack["resultType"] != "complete" {
		t.Fatalf("ack = %v", ack)
	}
	// The ack is sent after the resolution was applied.
	now := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil))
	if r, _ := now["inputRequests"].(map[string]any); r[key] != nil {
		t.Fatalf("answered key still listed: %v", now)
	}
	done := waitTask(t, c, id, status("completed"))
	if got := text(t, done["result"]); got != "Deleted a.txt." {
		t.Fatalf("result = %q", got)
	}

	// Two questions at once, answered one at a time.
	mid := callTool(t, c, "multi_input", map[string]any{})["taskId"].(string)
	res = waitTask(t, c, mid, func(r map[string]any) bool {
		m, _ := r["inputRequests"].(map[string]any)
		return r["status"] == "input_required" && len(m) == 2
	})
	var keys []string
	for k := range res["inputRequests"].(map[string]any) {
		keys = append(keys, k)
	}
	wantResult(t, c.call("tasks/update", map[string]any{"taskId": mid, "inputResponses": map[string]any{
		keys[0]:        map[string]any{"action": "accept", "content": map[string]any{"name": "Ada", "color": "red"}},
		"never-issued": map[string]any{"action": "accept"}}}, nil))
	res = wantResult(t, c.call("tasks/get", map[string]any{"taskId": mid}, nil))
	left, _ := res["inputRequests"].(map[string]any)
	if res["status"] != "input_required" || len(left) != 1 || left[keys[1]] == nil {
		t.Fatalf("after partial update = %v", res)
	}
	wantResult(t, c.call("tasks/update", map[string]any{"taskId": mid, "inputResponses": map[string]any{
		keys[1]: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada", "color": "red"}}}}, nil))
	waitTask(t, c, mid, status("completed"))
}

func TestIntegrationApproverEligibility(t *testing.T) {
	s := newStack(t, keysFor(t, "ka=acme:urn:someone,kl=acme:"+"urn:conformance:listed-approver"), "")
	c := s.client(t, "ka", tasksCaps())
	id := callTool(t, c, "conformance-approval-approvers", map[string]any{})["taskId"].(string)
	res := waitTask(t, c, id, status("input_required"))
	var key string
	for k, v := range res["inputRequests"].(map[string]any) {
		key = k
		schema := v.(map[string]any)["params"].(map[string]any)["requestedSchema"].(map[string]any)
		if schema["required"].([]any)[0] != "action" {
			t.Fatalf("approval schema = %v", schema)
		}
	}
	answer := map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}}}}
	// Not an eligible approver: refused, nothing resolved.
	wantNotApprover(t, c.call("tasks/update", answer, nil), key)
	if r := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil)); r["status"] != "input_required" {
		t.Fatalf("ineligible answer resolved the gate: %v", r)
	}
	listed := s.client(t, "kl", tasksCaps())
	wantResult(t, listed.call("tasks/update", answer, nil))
	waitTask(t, c, id, status("completed"))
}

func TestIntegrationBlocking(t *testing.T) {
	s := newStack(t, nil, "")
	c := s.client(t, "", map[string]any{})
	r := c.call("tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "World"}}, nil)
	res := wantResult(t, r)
	if res["resultType"] != "complete" || text(t, res) != "Hello, World!" || res["isError"] != false {
		t.Fatalf("greet = %v", res)
	}
	// The answer is flushed before the handler returns (request
	// ownership): its length goes ahead, so it is one write, not a
	// chunked body ended by another.
	if r.Length != int64(len(r.Raw)) {
		t.Fatalf("greet answered with Content-Length %d for a body of %d bytes", r.Length, len(r.Raw))
	}
	res = callTool(t, c, "slow_compute", map[string]any{"seconds": 1, "label": "sync"})
	if res["resultType"] != "complete" || res["taskId"] != nil || !strings.Contains(text(t, res), `"sync"`) {
		t.Fatalf("slow_compute without the extension = %v", res)
	}
	r = c.call("tools/call", map[string]any{"name": "failing_job", "arguments": map[string]any{}}, nil)
	wantError(t, r, 400, -32021)
	if r.Length != int64(len(r.Raw)) {
		t.Fatalf("refusal answered with Content-Length %d for a body of %d bytes", r.Length, len(r.Raw))
	}
	if res := callTool(t, c, "slow_compute", map[string]any{"seconds": "x"}); res["isError"] != true || !strings.Contains(text(t, res), "seconds") {
		t.Fatalf("slow_compute with seconds \"x\" = %v, want a tool-input error naming seconds", res)
	}
}

func TestIntegrationPreRunInput(t *testing.T) {
	s := newStack(t, nil, "")
	c := s.client(t, "", tasksCaps())
	round1 := callTool(t, c, "test_tool_with_task", map[string]any{})
	if round1["resultType"] != "input_required" || round1["taskId"] != nil {
		t.Fatalf("round 1 = %v", round1)
	}
	var key string
	for k := range round1["inputRequests"].(map[string]any) {
		key = k
	}
	r := c.call("tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}}}, nil)
	round2 := wantResult(t, r)
	if round2["resultType"] != "task" {
		t.Fatalf("round 2 = %v", round2)
	}
	done := waitTask(t, c, round2["taskId"].(string), status("completed"))
	if got := text(t, done["result"]); !strings.Contains(got, "Alice") {
		t.Fatalf("result = %q", got)
	}
}

func TestIntegrationIsolation(t *testing.T) {
	s := newStack(t, keysFor(t, "ka=acme:alice,kb=globex:bob"), "")
	alice := s.client(t, "ka", tasksCaps())
	bob := s.client(t, "kb", tasksCaps())
	id := callTool(t, alice, "slow_compute", map[string]any{"seconds": 30})["taskId"].(string)
	t.Cleanup(func() { alice.call("tasks/cancel", map[string]any{"taskId": id}, nil) })

	unknown := "acme~2F" + strings.Repeat("A", 24)
	var bodies []string
	for _, probe := range []struct {
		c   *client
		tid string
	}{{bob, id}, {alice, unknown}, {bob, "globex~2F" + strings.SplitN(runOf(t, id), "/", 2)[1]}, {alice, "acme~Q" + strings.Repeat("A", 24)}} {
		for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
			r := probe.c.call(m, map[string]any{"taskId": probe.tid, "inputResponses": map[string]any{}}, nil)
			var env map[string]json.RawMessage
			_ = json.Unmarshal(r.Raw, &env)
			bodies = append(bodies, fmt.Sprintf("%d %s", r.Status, env["error"]))
		}
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Fatalf("answers differ: %q vs %q", b, bodies[0])
		}
	}
	if !strings.Contains(bodies[0], `"task not found"`) {
		t.Fatalf("answer = %q", bodies[0])
	}
	// Bob's cancel did nothing to Alice's run.
	if r := wantResult(t, alice.call("tasks/get", map[string]any{"taskId": id}, nil)); r["status"] != "working" {
		t.Fatalf("alice's task = %v", r)
	}
}
