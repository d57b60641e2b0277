package mcpmount

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// startTask creates a task of tool slow and returns its taskId and runId.
func startTask(t *testing.T, c *client) (string, string) {
	t.Helper()
	res := wantResult(t, c.call("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 5}}, nil))
	id := res["taskId"].(string)
	raw, err := runid.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	return id, raw
}

func interrupts(runID string) []signals.Interrupt {
	return []signals.Interrupt{
		{ID: runID + "-i1", NodeID: "gate", Kind: signals.KindApproval, Key: "gate", Title: "Approve?",
			Description: "Publish the report.", Actions: []string{"accept", "reject", "edit-accept"}},
		{ID: runID + "-i2", NodeID: "ask", Kind: signals.KindClarification, Key: "name", Title: "Name?",
			Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		{ID: runID + "-i3", NodeID: "wait", Kind: signals.KindExternalEvent, Key: "hook", Title: "Webhook"},
	}
}

func TestTasksGetInputRequired(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client(t, tasksCaps())
	id, raw := startTask(t, c)
	s.runs.Update(raw, func(snap *signals.Snapshot) {
		snap.Status = signals.StatusWaitingApproval
		snap.Interrupts = interrupts(raw)
	})
	res := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil))
	if res["status"] != "input_required" || res["resultType"] != "complete" {
		t.Fatalf("tasks/get = %v", res)
	}
	reqs := res["inputRequests"].(map[string]any)
	if len(reqs) != 2 || reqs[raw+"-i3"] != nil {
		t.Fatalf("inputRequests keys = %v (external events are not client input)", reqs)
	}
	approval := reqs[raw+"-i1"].(map[string]any)["params"].(map[string]any)
	if approval["message"] != "Approve? — Publish the report." || approval["mode"] != "form" {
		t.Errorf("approval params = %v", approval)
	}
	schema, _ := json.Marshal(approval["requestedSchema"])
	if string(schema) != `{"properties":{"action":{"enum":["accept","reject","edit-accept"],"type":"string"}},"required":["action"],"type":"object"}` {
		t.Errorf("approval schema = %s", schema)
	}
	clar := reqs[raw+"-i2"].(map[string]any)["params"].(map[string]any)
	if clar["requestedSchema"].(map[string]any)["properties"].(map[string]any)["name"] == nil {
		t.Errorf("clarification schema = %v", clar["requestedSchema"])
	}
}

func TestTasksUpdate(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client(t, tasksCaps())
	id, raw := startTask(t, c)
	s.runs.Update(raw, func(snap *signals.Snapshot) {
		snap.Status = signals.StatusWaitingInput
		snap.Interrupts = interrupts(raw)[1:2]
		snap.Interrupts = append(snap.Interrupts, signals.Interrupt{ID: raw + "-i4", Kind: signals.KindClarification,
			Title: "Other?", Approvers: []string{"urn:someone-else"}})
	})
	s.runs.OnResolve(func(snap *signals.Snapshot) {
		if len(snap.Interrupts) == 0 {
			snap.Status = signals.StatusRunning
		}
	})
	// An answer the caller may not give (not an approver) refuses the
	// whole request: nothing is resolved.
	wantNotApprover(t, c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		raw + "-i2": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
		raw + "-i4": map[string]any{"action": "accept", "content": map[string]any{}},
	}}, nil), raw+"-i4")
	if rs := s.runs.Resolutions(); len(rs) != 0 {
		t.Fatalf("a refused update resolved %+v", rs)
	}
	r := c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		raw + "-i2":   map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
		"unknown-key": map[string]any{"ignored": true},
	}}, nil)
	res := wantResult(t, r)
	if len(res) != 2 || res["resultType"] != "complete" || res["_meta"] == nil {
		t.Fatalf("ack = %s", r.Raw)
	}
	got := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil))
	reqs := got["inputRequests"].(map[string]any)
	if reqs[raw+"-i2"] != nil || reqs[raw+"-i4"] == nil {
		t.Fatalf("after update inputRequests = %v", reqs)
	}
	if rs := s.runs.Resolutions(); len(rs) != 1 || string(rs[0].Content) != `{"name":"Ada"}` ||
		rs[0].ResolvedBy.SubjectID != "urn:openwop:anonymous" {
		t.Fatalf("resolutions = %+v", rs)
	}
	// Answering the same key again resolves nothing and is still acked.
	wantResult(t, c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		raw + "-i2": map[string]any{"action": "accept", "content": map[string]any{"name": "Bob"}}}}, nil))
	if len(s.runs.Resolutions()) != 1 {
		t.Fatal("an answered key was resolved twice")
	}
	// An empty update is acked.
	wantResult(t, c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{}}, nil))
	wantError(t, c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": []any{1}}, nil), 400, -32602)
}

func TestTasksCancel(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client(t, tasksCaps())
	id, raw := startTask(t, c)
	r := c.call("tasks/cancel", map[string]any{"taskId": id}, nil)
	if res := wantResult(t, r); len(res) != 2 || res["resultType"] != "complete" {
		t.Fatalf("ack = %s", r.Raw)
	}
	if reason, ok := s.runs.CancelReason(raw); !ok || reason != signals.ReasonCallerRequested {
		t.Fatalf("cancel reason = %q", reason)
	}
	got := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil))
	if got["status"] != "cancelled" || got["result"] != nil {
		t.Fatalf("after cancel = %v", got)
	}
	// A terminal task is acked and left alone.
	r = c.call("tasks/cancel", map[string]any{"taskId": id}, nil)
	if res := wantResult(t, r); res["resultType"] != "complete" {
		t.Fatalf("terminal ack = %s", r.Raw)
	}
}

func TestTasksGateBeforeLookup(t *testing.T) {
	s := newTestServer(t, nil)
	id, _ := startTask(t, s.client(t, tasksCaps()))
	plain := s.client(t, map[string]any{"elicitation": map[string]any{}, "tasks": map[string]any{}})
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		for _, tid := range []string{id, "gate-test"} {
			r := plain.call(m, map[string]any{"taskId": tid, "inputResponses": map[string]any{}}, nil)
			wantError(t, r, http.StatusBadRequest, -32021)
			if !bytes.Contains(r.Error.Data, []byte(`"io.modelcontextprotocol/tasks":{}`)) {
				t.Errorf("%s data = %s", m, r.Error.Data)
			}
		}
	}
}

// TestTaskIsolation: every task the caller cannot read gets the same answer.
func TestTaskIsolation(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.Authenticate = keysFor(t, "ka=acme:alice,kb=globex:bob").Authenticate })
	alice := s.client(t, tasksCaps())
	alice.key = "ka"
	bob := s.client(t, tasksCaps())
	bob.key = "kb"
	aliceTask, aliceRaw := startTask(t, alice)
	_, bobRaw := startTask(t, bob)
	opaque := strings.SplitN(aliceRaw, "/", 2)[1]

	unreadable := map[string]any{
		"unknown":                  "acme~2FAAAAAAAAAAAAAAAAAAAAAAAA",
		"malformed escape":         "acme~ZZ" + opaque,
		"truncated escape":         "acme~2",
		"no tenant segment":        opaque,
		"wrong tenant segment":     "globex~2F" + opaque,
		"other tenant's real task": runid.Project(bobRaw),
		"percent form of other":    strings.Replace(bobRaw, "/", "%2F", 1),
		"not a string":             42,
	}
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		var first []byte
		var firstStatus int
		for name, tid := range unreadable {
			params := map[string]any{"taskId": tid, "inputResponses": map[string]any{}}
			r := alice.call(method, params, nil)
			if r.Error == nil || r.Error.Code != -32602 || r.Error.Message != "task not found" || r.Error.Data != nil {
				t.Errorf("%s %s: %s", method, name, r.Raw)
				continue
			}
			var env map[string]any
			_ = json.Unmarshal(r.Raw, &env)
			errBody, _ := json.Marshal(env["error"])
			if first == nil {
				first, firstStatus = errBody, r.Status
			} else if !bytes.Equal(first, errBody) || r.Status != firstStatus {
				t.Errorf("%s %s: HTTP %d %s differs from HTTP %d %s", method, name, r.Status, errBody, firstStatus, first)
			}
		}
	}
	// The other tenant's run was not touched, and the owner still reads it.
	if _, ok := s.runs.CancelReason(bobRaw); ok {
		t.Fatal("alice cancelled bob's run")
	}
	if res := wantResult(t, alice.call("tasks/get", map[string]any{"taskId": aliceTask}, nil)); res["taskId"] != aliceTask {
		t.Fatal("owner cannot read its task")
	}
	// Both wire forms of one's own id work.
	pct := strings.Replace(aliceRaw, "/", "%2F", 1)
	if res := wantResult(t, alice.call("tasks/get", map[string]any{"taskId": pct}, nil)); res["taskId"] != aliceTask {
		t.Fatalf("percent form: %v", res)
	}
}

func TestProjection(t *testing.T) {
	created := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	base := signals.Snapshot{RunID: "acme/AbCdEfGhIjKlMnOpQrStUvWx", CreatedAt: created, UpdatedAt: created.Add(time.Second),
		StatusMessage: "the run is x"}
	with := func(f func(*signals.Snapshot)) signals.Snapshot { s := base; f(&s); return s }
	open := []signals.Interrupt{{ID: "acme/AbCdEfGhIjKlMnOpQrStUvWx-i1", Kind: signals.KindClarification, Title: "Q",
		Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"object"}}}`)}}
	tests := []struct {
		name   string
		snap   signals.Snapshot
		status string
		check  func(t *testing.T, d *wire.DetailedTaskResult)
	}{
		{"pending", with(func(s *signals.Snapshot) { s.Status = signals.StatusPending }), "working", nil},
		{"running", with(func(s *signals.Snapshot) { s.Status = signals.StatusRunning }), "working", nil},
		{"paused", with(func(s *signals.Snapshot) { s.Status = signals.StatusPaused }), "working", nil},
		{"cancelling", with(func(s *signals.Snapshot) { s.Status = signals.StatusCancelling }), "working", nil},
		{"waiting-external", with(func(s *signals.Snapshot) {
			s.Status = signals.StatusWaitingExternal
			s.Interrupts = []signals.Interrupt{{ID: "x", Kind: signals.KindExternalEvent}}
		}), "working", nil},
		{"waiting-input, non-flat schema", with(func(s *signals.Snapshot) { s.Status = signals.StatusWaitingInput; s.Interrupts = open }),
			"input_required", func(t *testing.T, d *wire.DetailedTaskResult) {
				got := d.InputRequests[open[0].ID].Params.RequestedSchema
				var s struct {
					Properties map[string]struct{ Type, Description string }
					Required   []string
				}
				if err := json.Unmarshal(got, &s); err != nil || len(s.Properties) != 1 || s.Properties["value"].Type != "string" ||
					!strings.HasSuffix(s.Properties["value"].Description, `JSON Schema: {"type":"object","properties":{"a":{"type":"object"}}}`) {
					t.Errorf("schema = %s, want {value: JSON text} naming the question's schema", got)
				}
			}},
		{"completed", with(func(s *signals.Snapshot) { completeWith(s, "ok") }), "completed", func(t *testing.T, d *wire.DetailedTaskResult) {
			if d.Result == nil || d.Result.IsError || d.Result.Content[0].Text != "ok" || d.Result.ResultType != wire.ResultComplete || d.Error != nil {
				t.Errorf("result = %+v", d.Result)
			}
		}},
		{"tool failure", with(func(s *signals.Snapshot) {
			s.Status = signals.StatusFailed
			s.Error = &signals.RunError{Code: "x", Message: "broke"}
		}), "completed", func(t *testing.T, d *wire.DetailedTaskResult) {
			if d.Result == nil || !d.Result.IsError || d.Result.Content[0].Text != "broke" || d.Error != nil {
				t.Errorf("result = %+v", d.Result)
			}
		}},
		{"protocol failure", with(func(s *signals.Snapshot) {
			s.Status = signals.StatusFailed
			s.Error = &signals.RunError{Code: "x", Message: "rpc", RPCCode: -32603}
		}), "failed", func(t *testing.T, d *wire.DetailedTaskResult) {
			if d.Error == nil || d.Error.Code != -32603 || d.Error.Message != "rpc" || d.Result != nil {
				t.Errorf("error = %+v result = %+v", d.Error, d.Result)
			}
		}},
		{"cancelled", with(func(s *signals.Snapshot) { s.Status = signals.StatusCancelled }), "cancelled", func(t *testing.T, d *wire.DetailedTaskResult) {
			if d.Result != nil || d.Error != nil || d.InputRequests != nil {
				t.Errorf("cancelled carries %+v", d)
			}
		}},
	}
	p := wire.Projector{Pacer: core.NewPacer(250 * time.Millisecond)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.DetailedTask(tt.snap, signals.Subject{Tenant: "acme", SubjectID: "alice"})
			// A task that waits for the client's input is polled less often.
			wantPoll := int64(250)
			if tt.status == "input_required" {
				wantPoll = 1000
			}
			if d.Status != tt.status || d.ResultType != "complete" || d.TaskID != "acme~2FAbCdEfGhIjKlMnOpQrStUvWx" ||
				d.CreatedAt != "2026-12-02T10:00:00Z" || d.LastUpdatedAt != "2026-12-02T10:00:01Z" || d.TTLMs != nil ||
				d.PollIntervalMs != wantPoll || d.StatusMessage != tt.snap.CurrentMessage(time.Now()) {
				t.Fatalf("task = %+v", d)
			}
			if tt.check != nil {
				tt.check(t, d)
			}
		})
	}
}
