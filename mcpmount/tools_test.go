package mcpmount

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

func TestDiscover(t *testing.T) {
	s := newTestServer(t, nil)
	res := wantResult(t, s.client(t, map[string]any{}).call("server/discover", nil, nil))
	caps := res["capabilities"].(map[string]any)
	if _, ok := caps["tools"]; !ok {
		t.Errorf("no capabilities.tools: %v", caps)
	}
	ext, _ := caps["extensions"].(map[string]any)
	if v, ok := ext[ExtensionTasks].(map[string]any); !ok || len(v) != 0 {
		t.Errorf("capabilities.extensions = %v", caps["extensions"])
	}
	if _, sessionless := caps["tasks"]; sessionless {
		t.Error("session-dialect capabilities.tasks advertised")
	}
	info := res["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"].(map[string]any)
	if info["name"] != "test-mount" || info["version"] != "1.2.3" {
		t.Errorf("serverInfo = %v", info)
	}
	if res["resultType"] != "complete" || res["ttlMs"] != float64(5000) || res["cacheScope"] != "public" {
		t.Errorf("discover = %v", res)
	}
	if v, _ := res["supportedVersions"].([]any); len(v) == 0 || v[0] != ProtocolVersion {
		t.Errorf("supportedVersions = %v", res["supportedVersions"])
	}
}

// companionTools are the companion tools, as a listing of a client that
// did not declare the Tasks extension ends.
const companionTools = "openwop_run_status,openwop_run_answer,openwop_run_cancel," + runListTool

// runListTool is the list tool, listed to every client last.
const runListTool = "openwop_run_list"

func TestToolsList(t *testing.T) {
	s := newTestServer(t, nil)
	res := wantResult(t, s.client(t, map[string]any{}).call("tools/list", nil, nil))
	if res["resultType"] != "complete" || res["ttlMs"] != float64(5000) || res["cacheScope"] != "private" {
		t.Errorf("tools/list envelope = %v", res)
	}
	if _, ok := res["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"]; !ok {
		t.Error("tools/list result has no serverInfo")
	}
	var names []string
	for _, x := range res["tools"].([]any) {
		tl := x.(map[string]any)
		names = append(names, tl["name"].(string))
		if tl["description"] == "" || tl["inputSchema"] == nil {
			t.Errorf("tool %v lacks description or inputSchema", tl)
		}
	}
	// anon:local cannot see acme_only; the rest is sorted by name.
	if got := strings.Join(names, ","); got != "ask_first,greet,required_job,slow,"+companionTools {
		t.Errorf("tools = %s", got)
	}
}

// TestSessionDialectClient checks that a session-dialect client (no
// MCP-Protocol-Version header, no _meta) still lists and calls tools on the
// same endpoint, and never sees the Tasks extension.
func TestSessionDialectClient(t *testing.T) {
	s := newTestServer(t, nil)
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	r := post(t, s.URL, hdr, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`))
	res := wantResult(t, r)
	if caps := res["capabilities"].(map[string]any); caps["extensions"] != nil {
		t.Errorf("session-dialect initialize advertises extensions: %v", caps)
	}
	r = post(t, s.URL, hdr, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	res = wantResult(t, r)
	// It declared neither tasks nor elicitation: the companion tools follow.
	if _, ok := res["resultType"]; ok || strings.Join(toolNames(res), ",") != "ask_first,greet,required_job,slow,"+companionTools {
		t.Errorf("session-dialect tools/list = %s", r.Raw)
	}
	r = post(t, s.URL, hdr, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":{"name":"old"}}}`))
	res = wantResult(t, r)
	if _, ok := res["resultType"]; ok || res["content"].([]any)[0].(map[string]any)["text"] != "Hello, old!" {
		t.Errorf("session-dialect tools/call = %s", r.Raw)
	}
	// A task-only tool cannot serve a client that cannot hold a task.
	r = post(t, s.URL, hdr, []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"required_job","arguments":{}}}`))
	if r.Error == nil || r.Error.Code != -32021 {
		t.Errorf("session-dialect call of a task-only tool = %s", r.Raw)
	}
}

func TestArgumentsValidatedBeforeStart(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client(t, tasksCaps())
	tests := []struct {
		name string
		args any
		want string
	}{
		{"missing required", map[string]any{}, "seconds"},
		{"wrong type", map[string]any{"seconds": "ten"}, "seconds"},
		{"below minimum", map[string]any{"seconds": -1}, "minimum"},
		{"not an object", []any{1}, "JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A tool-input error is a tool result (SEP-1303).
			res := wantResult(t, c.call("tools/call", map[string]any{"name": "slow", "arguments": tt.args}, nil))
			if res["isError"] != true || res["resultType"] != "complete" || res["taskId"] != nil {
				t.Fatalf("result = %v, want a complete CallToolResult with isError", res)
			}
			if msg := text(t, res); !strings.Contains(msg, tt.want) {
				t.Errorf("text %q does not mention %q", msg, tt.want)
			}
		})
	}
	wantError(t, c.call("tools/call", map[string]any{"name": "nope", "arguments": map[string]any{}}, nil), 400, -32602)
	if n := s.runs.StartCount(); n != 0 {
		t.Fatalf("%d runs started for invalid calls", n)
	}
}

func TestRequiredTaskWithoutExtension(t *testing.T) {
	s := newTestServer(t, nil)
	r := s.client(t, map[string]any{"elicitation": map[string]any{}}).call("tools/call",
		map[string]any{"name": "required_job", "arguments": map[string]any{}}, nil)
	wantError(t, r, http.StatusBadRequest, -32021)
	if got := string(r.Error.Data); got != `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}` {
		t.Errorf("data = %s", got)
	}
	if s.runs.StartCount() != 0 {
		t.Fatal("a run started")
	}
}

func TestCreateTaskResult(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client(t, tasksCaps())
	r := c.call("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 5},
		"task": map[string]any{"ttl": 1000}}, nil)
	res := wantResult(t, r)
	if res["resultType"] != "task" || res["status"] != "working" {
		t.Fatalf("result = %s", r.Raw)
	}
	id := res["taskId"].(string)
	raw, err := runid.Parse(id)
	if err != nil || !strings.Contains(id, "~2F") || runid.Tenant(raw) != "anon:local" {
		t.Errorf("taskId %q (raw %q, err %v)", id, raw, err)
	}
	if v, ok := res["ttlMs"]; !ok || v != nil {
		t.Errorf("ttlMs = %v (present %v), want null", v, ok)
	}
	if res["pollIntervalMs"] != float64(500) || res["createdAt"] == "" || res["lastUpdatedAt"] == "" {
		t.Errorf("task fields = %v", res)
	}
	for _, k := range []string{"result", "error", "inputRequests", "requestState", "task", "ttl"} {
		if _, ok := res[k]; ok {
			t.Errorf("CreateTaskResult carries %q", k)
		}
	}
	if _, ok := res["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"]; !ok {
		t.Error("no serverInfo")
	}
	start := s.runs.LastStart()
	if start.Tool.Name != "slow" || start.Tool.TaskSupport != signals.TaskOptional || start.Transport != signals.TransportMCP || string(start.Arguments) != `{"seconds":5}` {
		t.Errorf("start = %+v", start)
	}
	// The run exists when the handle arrives.
	got := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil))
	if got["taskId"] != id || got["status"] != "working" || got["resultType"] != "complete" {
		t.Errorf("tasks/get = %v", got)
	}
}

func TestForbiddenToolRunsBlockingWithExtension(t *testing.T) {
	s := newTestServer(t, nil)
	r := s.client(t, tasksCaps()).call("tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "W"},
		"task": map[string]any{"ttl": 60000}}, nil)
	res := wantResult(t, r)
	if res["resultType"] != "complete" || res["isError"] != false || res["taskId"] != nil {
		t.Fatalf("greet = %s", r.Raw)
	}
}

func TestBlockingCall(t *testing.T) {
	tests := []struct {
		name    string
		finish  func(*signals.Snapshot)
		isError bool
		code    int
		text    string
	}{
		{"completed", func(s *signals.Snapshot) { completeWith(s, "done") }, false, 0, "done"},
		{"tool failure", func(s *signals.Snapshot) {
			s.Status = signals.StatusFailed
			s.Error = &signals.RunError{Code: "boom", Message: "it broke"}
		}, true, 0, "it broke"},
		{"cancelled", func(s *signals.Snapshot) { s.Status = signals.StatusCancelled }, true, 0, "cancelled"},
		{"protocol error", func(s *signals.Snapshot) {
			s.Status = signals.StatusFailed
			s.Error = &signals.RunError{Code: "rpc", Message: "bad call", RPCCode: -32603}
		}, false, -32603, "bad call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, nil)
			s.runs.OnStart(func(_ runs.NewRun, snap *signals.Snapshot) {
				// Finish the run after Start stored it, while the call waits.
				id := snap.RunID
				time.AfterFunc(20*time.Millisecond, func() { s.runs.Update(id, tt.finish) })
			})
			// No extension: the call waits for the run's end.
			r := s.client(t, map[string]any{}).call("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 1}}, nil)
			if tt.code != 0 {
				if r.Error == nil || r.Error.Code != tt.code || r.Error.Message != tt.text {
					t.Fatalf("want error %d, got %s", tt.code, r.Raw)
				}
				return
			}
			res := wantResult(t, r)
			text := res["content"].([]any)[0].(map[string]any)["text"].(string)
			if res["isError"] != tt.isError || res["resultType"] != "complete" || !strings.Contains(text, tt.text) {
				t.Fatalf("result = %s", r.Raw)
			}
		})
	}
}

func TestPreRunInputs(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client(t, tasksCaps())

	// Round 1: the input is asked before any run exists.
	r := c.call("tools/call", map[string]any{"name": "ask_first", "arguments": map[string]any{}}, nil)
	res := wantResult(t, r)
	if res["resultType"] != "input_required" || res["taskId"] != nil {
		t.Fatalf("round 1 = %s", r.Raw)
	}
	req := res["inputRequests"].(map[string]any)["user_name"].(map[string]any)
	params := req["params"].(map[string]any)
	if req["method"] != "elicitation/create" || params["mode"] != "form" || params["message"] != "Your name?" || params["requestedSchema"] == nil {
		t.Fatalf("input request = %v", req)
	}
	if s.runs.StartCount() != 0 {
		t.Fatal("round 1 started a run")
	}

	// Invalid content is refused, still without a run.
	r = c.call("tools/call", map[string]any{"name": "ask_first", "arguments": map[string]any{},
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"nom": 1}}}}, nil)
	wantError(t, r, 400, -32602)

	// A declined input answers an error result and starts nothing.
	r = c.call("tools/call", map[string]any{"name": "ask_first", "arguments": map[string]any{},
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "decline"}}}, nil)
	if res := wantResult(t, r); res["isError"] != true || s.runs.StartCount() != 0 {
		t.Fatalf("decline = %s", r.Raw)
	}

	// Round 2 starts the run with the answer and returns a task.
	r = c.call("tools/call", map[string]any{"name": "ask_first", "arguments": map[string]any{},
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}},
		"requestState":   "opaque"}, nil)
	res = wantResult(t, r)
	if res["resultType"] != "task" || res["requestState"] != nil || res["inputRequests"] != nil {
		t.Fatalf("round 2 = %s", r.Raw)
	}
	if got := string(s.runs.LastStart().PreRunInputs["user_name"]); got != `{"name":"Alice"}` {
		t.Fatalf("pre-run input = %s", got)
	}

	// Without the elicitation capability the question cannot be asked.
	r = s.client(t, map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}}).call("tools/call",
		map[string]any{"name": "ask_first", "arguments": map[string]any{}}, nil)
	wantError(t, r, 400, -32021)
	var data map[string]map[string]json.RawMessage
	if err := json.Unmarshal(r.Error.Data, &data); err != nil || data["requiredCapabilities"]["elicitation"] == nil {
		t.Fatalf("data = %s", r.Error.Data)
	}
}
