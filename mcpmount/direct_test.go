package mcpmount

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/signals/runid"
)

// updateGolden rewrites the golden answers of TestWireGolden from what the
// mount answers now (go test -run TestWireGolden ./mcpmount -update-golden).
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/*.golden from the answers the mount gives")

// goldenWire is the file of TestWireGolden's expected answers. They were
// recorded from the go-sdk's stateless handler (the path every 2026-07-28
// request took before the mount answered them itself), and the mount's
// own answers are held to them byte for byte.
const goldenWire = "testdata/wire-2026-07-28.golden"

// TestWireGolden sends 2026-07-28 requests, valid and invalid, of every
// method the mount answers itself (tasks/*, tools/call, tools/list,
// server/discover) over one run service on the embedded Temporal server,
// and wants the answers of goldenWire byte for byte: HTTP status, the
// headers of rawAnswer and the body (task ids, times and request states
// masked).
func TestWireGolden(t *testing.T) {
	s := newStack(t, nil, "")
	c := s.client(t, "", tasksCaps())
	started := wantResult(t, c.call("tools/call", map[string]any{"name": "conformance-approval", "arguments": map[string]any{}}, nil))
	task, _ := started["taskId"].(string)
	if task == "" {
		t.Fatalf("tools/call = %v, want a CreateTaskResult", started)
	}
	// The first polls may see the run as it started (a poll answers the
	// last reading while a fresh read is slow): wait for the question.
	key := ""
	for k := range waitTask(t, c, task, status("input_required"))["inputRequests"].(map[string]any) {
		key = k
	}
	if key == "" {
		t.Fatal("the approval was asked with no input request")
	}
	foreign := runid.Project("other-tenant/AAAAAAAAAAAAAAAAAAAAAAAA")
	meta := func(caps any, info any) map[string]any {
		m := map[string]any{
			"io.modelcontextprotocol/protocolVersion":    ProtocolVersion,
			"io.modelcontextprotocol/clientCapabilities": caps,
		}
		if info != nil {
			m["io.modelcontextprotocol/clientInfo"] = info
		}
		return m
	}
	okMeta := meta(tasksCaps(), map[string]any{"name": "x", "version": "1"})
	accept := func(content any) map[string]any {
		return map[string]any{key: map[string]any{"action": "accept", "content": content}}
	}
	call := func(name string, args any) map[string]any {
		return map[string]any{"name": name, "arguments": args, "_meta": okMeta}
	}
	blocking := meta(map[string]any{}, map[string]any{"name": "x", "version": "1"})
	elicit := meta(map[string]any{"elicitation": map[string]any{}}, map[string]any{"name": "x", "version": "1"})
	type wireCase struct {
		name   string
		id     any
		method string
		params map[string]any
		hdr    map[string]string // header overrides; "" deletes one
	}
	sse := map[string]string{"Accept": acceptSSE}
	tests := []wireCase{
		{"get", 1, "tasks/get", map[string]any{"taskId": task, "_meta": okMeta}, nil},
		{"get, string id with escapes", "a\u0041<&>é", "tasks/get", map[string]any{"taskId": task, "_meta": okMeta}, nil},
		{"get, no clientInfo", 2, "tasks/get", map[string]any{"taskId": task, "_meta": meta(tasksCaps(), nil)}, nil},
		{"get, clientInfo a string", 3, "tasks/get", map[string]any{"taskId": task, "_meta": meta(tasksCaps(), "bench")}, nil},
		{"get, clientInfo name a number", 4, "tasks/get", map[string]any{"taskId": task, "_meta": meta(tasksCaps(), map[string]any{"name": 5})}, nil},
		{"get, capabilities with a bad extensions", 5, "tasks/get", map[string]any{"taskId": task, "_meta": meta(map[string]any{"extensions": []any{}}, nil)}, nil},
		{"get, capabilities with roots a number", 20, "tasks/get", map[string]any{"taskId": task, "_meta": meta(map[string]any{"roots": 5}, nil)}, nil},
		{"get, capabilities with roots.listChanged a string", 21, "tasks/get", map[string]any{"taskId": task,
			"_meta": meta(map[string]any{"roots": map[string]any{"listChanged": "yes"}, "extensions": map[string]any{ExtensionTasks: map[string]any{}}}, nil)}, nil},
		{"get, extension not declared", 6, "tasks/get", map[string]any{"taskId": task, "_meta": meta(map[string]any{}, nil)}, nil},
		{"get, malformed taskId", 7, "tasks/get", map[string]any{"taskId": "nope", "_meta": okMeta}, nil},
		{"get, taskId a number", 8, "tasks/get", map[string]any{"taskId": 8, "_meta": okMeta}, nil},
		{"get, no taskId", 9, "tasks/get", map[string]any{"_meta": okMeta}, nil},
		{"get, another tenant's task", 10, "tasks/get", map[string]any{"taskId": foreign, "_meta": okMeta}, nil},
		{"get, SSE preferred", 40, "tasks/get", map[string]any{"taskId": task, "_meta": okMeta}, sse},
		{"get, Accept JSON only", 41, "tasks/get", map[string]any{"taskId": task, "_meta": okMeta}, map[string]string{"Accept": "application/json"}},
		{"get, no Accept", 42, "tasks/get", map[string]any{"taskId": task, "_meta": okMeta}, map[string]string{"Accept": ""}},
		{"get, Last-Event-ID", 43, "tasks/get", map[string]any{"taskId": task, "_meta": okMeta}, map[string]string{"Last-Event-ID": "x_1"}},
		{"update, inputResponses a number", 11, "tasks/update", map[string]any{"taskId": task, "inputResponses": 5, "_meta": okMeta}, nil},
		{"update, unknown action", 12, "tasks/update", map[string]any{"taskId": task, "_meta": okMeta,
			"inputResponses": map[string]any{key: map[string]any{"action": "maybe"}}}, nil},
		{"update, a key never asked", 13, "tasks/update", map[string]any{"taskId": task, "_meta": okMeta,
			"inputResponses": map[string]any{"never": map[string]any{"action": "accept"}}}, nil},
		{"update, another tenant's task", 14, "tasks/update", map[string]any{"taskId": foreign, "_meta": okMeta,
			"inputResponses": accept(map[string]any{"action": "accept"})}, nil},
		{"update, SSE preferred, a key never asked", 44, "tasks/update", map[string]any{"taskId": task, "_meta": okMeta,
			"inputResponses": map[string]any{"never": map[string]any{"action": "accept"}}}, sse},
		{"cancel, another tenant's task", 15, "tasks/cancel", map[string]any{"taskId": foreign, "_meta": okMeta}, nil},
		{"cancel, SSE preferred, another tenant's task", 45, "tasks/cancel", map[string]any{"taskId": foreign, "_meta": okMeta}, sse},
		{"update, accept (the first resolves it)", 16, "tasks/update", map[string]any{"taskId": task, "_meta": okMeta,
			"inputResponses": accept(map[string]any{"action": "accept"})}, nil},
		{"get, completed", 17, "tasks/get", map[string]any{"taskId": task, "_meta": okMeta}, nil},
		{"cancel, completed", 18, "tasks/cancel", map[string]any{"taskId": task, "_meta": okMeta}, nil},

		{"call as a task", 30, "tools/call", call("conformance-approval", map[string]any{}), nil},
		{"call of a task-forbidden tool", 31, "tools/call", call("greet", map[string]any{"name": "Ada"}), nil},
		{"call, unknown tool", 32, "tools/call", call("nope", map[string]any{}), nil},
		{"call, arguments the schema refuses", 33, "tools/call", call("conformance-delay", map[string]any{"delayMs": -5}), nil},
		{"call, arguments out of float range", 34, "tools/call", call("conformance-delay", json.RawMessage(`{"delayMs":1e999}`)), nil},
		{"call, pre-run input asked", 35, "tools/call", call("test_tool_with_task", map[string]any{}), nil},
		{"call, clientInfo a string", 36, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "A"},
			"_meta": meta(tasksCaps(), "x")}, nil},
		{"blocking call of a task-required tool", 37, "tools/call", map[string]any{"name": "protocol_error_job", "arguments": map[string]any{},
			"_meta": blocking}, nil},
		{"blocking call of a suspending tool without elicitation", 38, "tools/call", map[string]any{"name": "conformance-approval",
			"arguments": map[string]any{}, "_meta": blocking}, nil},
		{"blocking call that completes", 39, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"},
			"_meta": blocking}, nil},
		{"blocking call that completes, SSE preferred", 50, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"},
			"_meta": blocking}, sse},
		{"call as a task, SSE preferred", 51, "tools/call", call("conformance-approval", map[string]any{}), sse},
		{"call, unknown tool, SSE preferred", 52, "tools/call", call("nope", map[string]any{}), sse},
		{"call, Accept JSON only", 53, "tools/call", call("greet", map[string]any{"name": "Ada"}), map[string]string{"Accept": "application/json"}},
		{"call, arguments an array", 54, "tools/call", call("greet", []any{1}), nil},
		{"call, no arguments", 55, "tools/call", map[string]any{"name": "greet", "_meta": blocking}, nil},
		{"call, requestState that does not open", 56, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"},
			"requestState": "garbage", "inputResponses": map[string]any{}, "_meta": elicit}, nil},
		{"call, requestState that does not open, SSE preferred", 57, "tools/call", map[string]any{"name": "greet",
			"arguments": map[string]any{"name": "Ada"}, "requestState": "garbage", "_meta": elicit}, sse},
		{"call, pre-run input declined", 58, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
			"inputResponses": map[string]any{"user_name": map[string]any{"action": "decline"}}, "_meta": elicit}, nil},
		{"call, pre-run input with an unknown action", 59, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
			"inputResponses": map[string]any{"user_name": map[string]any{"action": "maybe"}}, "_meta": elicit}, nil},

		{"call, name a number", 80, "tools/call", map[string]any{"name": 5, "arguments": map[string]any{}, "_meta": okMeta}, nil},
		{"call, no name", 81, "tools/call", map[string]any{"arguments": map[string]any{}, "_meta": okMeta}, nil},
		{"call, requestState a number", 82, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"},
			"requestState": 5, "_meta": elicit}, nil},
		{"call, inputResponses a number", 83, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"},
			"inputResponses": 5, "_meta": elicit}, nil},
		{"call, inputResponses entry a number", 84, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
			"inputResponses": map[string]any{"user_name": 5}, "_meta": elicit}, nil},
		{"call, inputResponses entry without action", 85, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
			"inputResponses": map[string]any{"user_name": map[string]any{"content": map[string]any{}}}, "_meta": elicit}, nil},
		{"call, pre-run input answered", 86, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
			"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}, "_meta": okMeta}, nil},
		{"call, pre-run input answered off-schema", 87, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
			"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": 5}}}, "_meta": okMeta}, nil},
		{"call, task param ignored", 88, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}, "task": map[string]any{},
			"_meta": blocking}, nil},
		{"call, arguments null", 89, "tools/call", map[string]any{"name": "greet", "arguments": nil, "_meta": blocking}, nil},
		{"get, params taskId null", 90, "tasks/get", map[string]any{"taskId": nil, "_meta": okMeta}, nil},
		{"update, no inputResponses", 91, "tasks/update", map[string]any{"taskId": task, "_meta": okMeta}, nil},
		{"list", 60, "tools/list", map[string]any{"_meta": okMeta}, nil},
		{"list, SSE preferred", 61, "tools/list", map[string]any{"_meta": okMeta}, sse},
		{"list, no params but _meta", 62, "tools/list", map[string]any{"_meta": blocking}, nil},
		{"list, cursor", 63, "tools/list", map[string]any{"_meta": okMeta, "cursor": "abc"}, nil},
		{"list, Accept JSON only", 64, "tools/list", map[string]any{"_meta": okMeta}, map[string]string{"Accept": "application/json"}},
		{"list, clientInfo a string", 65, "tools/list", map[string]any{"_meta": meta(tasksCaps(), "x")}, nil},
		{"discover", 70, "server/discover", map[string]any{"_meta": okMeta}, nil},
		{"discover, SSE preferred", 71, "server/discover", map[string]any{"_meta": okMeta}, sse},
		{"discover, string id", "d", "server/discover", map[string]any{"_meta": blocking}, nil},
		{"discover, clientCapabilities with roots a number", 72, "server/discover", map[string]any{"_meta": meta(map[string]any{"roots": 5}, nil)}, nil},
	}
	var got strings.Builder
	for _, tt := range tests {
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": tt.id, "method": tt.method, "params": tt.params})
		if err != nil {
			t.Fatal(err)
		}
		name := ""
		if v, ok := tt.params["taskId"].(string); ok {
			name = v
		}
		if v, ok := tt.params["name"].(string); ok {
			name = v
		}
		if tt.name == "get, completed" {
			// Read the run once it has ended.
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				r := wantResult(t, c.call("tasks/get", map[string]any{"taskId": task}, nil))
				if r["status"] != "working" && r["status"] != "input_required" {
					break
				}
			}
		}
		a := rawPost(t, s.URL+"/mcp", tt.method, name, body, tt.hdr)
		a.body = maskRun(a.body)
		if a.status >= 500 || !strings.Contains(a.body, `"jsonrpc":"2.0"`) {
			t.Errorf("%s: answer %s", tt.name, a)
		}
		got.WriteString("=== " + tt.name + "\n" + a.String() + "\n")
	}
	path := filepath.FromSlash(goldenWire)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wantCases, gotCases := splitGolden(string(want)), splitGolden(got.String())
	if len(wantCases) != len(gotCases) {
		t.Fatalf("%d answers, the golden file has %d", len(gotCases), len(wantCases))
	}
	for i := range wantCases {
		if gotCases[i] != wantCases[i] {
			t.Errorf("answer:\n%s\nwant:\n%s", gotCases[i], wantCases[i])
		}
	}
}

// splitGolden splits a golden file into its cases.
func splitGolden(s string) []string {
	parts := strings.Split(s, "=== ")
	return parts[1:]
}

// rawAnswer is what TestWireGolden compares.
type rawAnswer struct {
	status int
	header http.Header
	body   string
}

// goldenHeaders are the response headers TestWireGolden compares.
var goldenHeaders = []string{"Content-Type", "Cache-Control", "Connection", "X-Accel-Buffering", "Retry-After", "Allow"}

func (a rawAnswer) String() string {
	var b strings.Builder
	b.WriteString(http.StatusText(a.status))
	for _, h := range goldenHeaders {
		if v := a.header.Values(h); len(v) > 0 {
			b.WriteString(" | " + h + ": " + strings.Join(v, ","))
		}
	}
	return b.String() + "\n" + a.body
}

// rawPost posts a 2026-07-28 request with the standard headers (hdr
// overrides them; an empty value deletes one) and returns the answer as it
// came.
func rawPost(t testing.TB, url, method, name string, body []byte, hdr map[string]string) rawAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptJSON)
	req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return rawAnswer{status: resp.StatusCode, header: resp.Header, body: buf.String()}
}

// maskRun replaces what differs between two starts of the same tool in an
// answer: the task id, the times and sealed request states.
func maskRun(body string) string {
	body = regexp.MustCompile(`"taskId":"[^"]*"`).ReplaceAllString(body, `"taskId":"*"`)
	body = regexp.MustCompile(`"requestState":"[^"]*"`).ReplaceAllString(body, `"requestState":"*"`)
	body = regexp.MustCompile(`(runs/|run )[A-Za-z0-9~_./-]+`).ReplaceAllString(body, `$1*`)
	body = regexp.MustCompile(`anon:local/[A-Za-z0-9_-]+`).ReplaceAllString(body, `anon:local/*`)
	return regexp.MustCompile(`"(createdAt|lastUpdatedAt)":"[^"]*"`).ReplaceAllString(body, `"$1":"*"`)
}
