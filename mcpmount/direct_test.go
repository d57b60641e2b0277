package mcpmount

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/signals/runid"
)

// TestDirectMethodsMatchSDK sends the same tasks/* and tools/call requests,
// valid and invalid, to the stock mount (which answers them itself:
// serveDirect, callHandler) and to a mount that hands every request to the
// SDK, both over one run service on the embedded Temporal server, and wants
// byte-identical answers: HTTP status, Content-Type, Cache-Control and body
// (task ids and times masked in tools/call answers).
func TestDirectMethodsMatchSDK(t *testing.T) {
	var opts Options
	s := newStackWith(t, nil, "", func(o *Options) func(*Mount) {
		opts = *o
		return nil
	})
	sdk, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	sdk.sdkOnly = true
	sdkSrv := httptest.NewServer(sdk)
	t.Cleanup(sdkSrv.Close)

	c := s.client(t, "", tasksCaps())
	started := wantResult(t, c.call("tools/call", map[string]any{"name": "conformance-approval", "arguments": map[string]any{}}, nil))
	task, _ := started["taskId"].(string)
	if task == "" {
		t.Fatalf("tools/call = %v, want a CreateTaskResult", started)
	}
	key := ""
	for deadline := time.Now().Add(30 * time.Second); key == "" && time.Now().Before(deadline); {
		got := wantResult(t, c.call("tasks/get", map[string]any{"taskId": task}, nil))
		for k := range got["inputRequests"].(map[string]any) {
			key = k
		}
	}
	if key == "" {
		t.Fatal("the approval was never asked")
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
	tests := []struct {
		name   string
		id     any
		method string
		params map[string]any
	}{
		{"get", 1, "tasks/get", map[string]any{"taskId": task, "_meta": okMeta}},
		{"get, string id with escapes", "a\u0041<&>é", "tasks/get", map[string]any{"taskId": task, "_meta": okMeta}},
		{"get, no clientInfo", 2, "tasks/get", map[string]any{"taskId": task, "_meta": meta(tasksCaps(), nil)}},
		{"get, clientInfo a string", 3, "tasks/get", map[string]any{"taskId": task, "_meta": meta(tasksCaps(), "bench")}},
		{"get, clientInfo name a number", 4, "tasks/get", map[string]any{"taskId": task, "_meta": meta(tasksCaps(), map[string]any{"name": 5})}},
		{"get, capabilities with a bad extensions", 5, "tasks/get", map[string]any{"taskId": task, "_meta": meta(map[string]any{"extensions": []any{}}, nil)}},
		{"get, capabilities with roots a number", 20, "tasks/get", map[string]any{"taskId": task, "_meta": meta(map[string]any{"roots": 5}, nil)}},
		{"get, capabilities with roots.listChanged a string", 21, "tasks/get", map[string]any{"taskId": task,
			"_meta": meta(map[string]any{"roots": map[string]any{"listChanged": "yes"}, "extensions": map[string]any{ExtensionTasks: map[string]any{}}}, nil)}},
		{"get, extension not declared", 6, "tasks/get", map[string]any{"taskId": task, "_meta": meta(map[string]any{}, nil)}},
		{"get, malformed taskId", 7, "tasks/get", map[string]any{"taskId": "nope", "_meta": okMeta}},
		{"get, taskId a number", 8, "tasks/get", map[string]any{"taskId": 8, "_meta": okMeta}},
		{"get, no taskId", 9, "tasks/get", map[string]any{"_meta": okMeta}},
		{"get, another tenant's task", 10, "tasks/get", map[string]any{"taskId": foreign, "_meta": okMeta}},
		{"update, inputResponses a number", 11, "tasks/update", map[string]any{"taskId": task, "inputResponses": 5, "_meta": okMeta}},
		{"update, unknown action", 12, "tasks/update", map[string]any{"taskId": task, "_meta": okMeta,
			"inputResponses": map[string]any{key: map[string]any{"action": "maybe"}}}},
		{"update, a key never asked", 13, "tasks/update", map[string]any{"taskId": task, "_meta": okMeta,
			"inputResponses": map[string]any{"never": map[string]any{"action": "accept"}}}},
		{"update, another tenant's task", 14, "tasks/update", map[string]any{"taskId": foreign, "_meta": okMeta,
			"inputResponses": accept(map[string]any{"action": "accept"})}},
		{"cancel, another tenant's task", 15, "tasks/cancel", map[string]any{"taskId": foreign, "_meta": okMeta}},
		{"update, accept (the first resolves it)", 16, "tasks/update", map[string]any{"taskId": task, "_meta": okMeta,
			"inputResponses": accept(map[string]any{"action": "accept"})}},
		{"get, completed", 17, "tasks/get", map[string]any{"taskId": task, "_meta": okMeta}},
		{"cancel, completed", 18, "tasks/cancel", map[string]any{"taskId": task, "_meta": okMeta}},
	}
	call := func(name string, args any) map[string]any {
		return map[string]any{"name": name, "arguments": args, "_meta": okMeta}
	}
	blocking := meta(map[string]any{}, map[string]any{"name": "x", "version": "1"})
	calls := []struct {
		name   string
		id     any
		method string
		params map[string]any
	}{
		{"call as a task", 30, "tools/call", call("conformance-approval", map[string]any{})},
		{"call of a task-forbidden tool", 31, "tools/call", call("greet", map[string]any{"name": "Ada"})},
		{"call, unknown tool", 32, "tools/call", call("nope", map[string]any{})},
		{"call, arguments the schema refuses", 33, "tools/call", call("conformance-delay", map[string]any{"delayMs": -5})},
		{"call, arguments out of float range", 34, "tools/call", call("conformance-delay", json.RawMessage(`{"delayMs":1e999}`))},
		{"call, pre-run input asked", 35, "tools/call", call("test_tool_with_task", map[string]any{})},
		{"call, clientInfo a string", 36, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "A"},
			"_meta": meta(tasksCaps(), "x")}},
		{"blocking call of a task-required tool", 37, "tools/call", map[string]any{"name": "protocol_error_job", "arguments": map[string]any{},
			"_meta": blocking}},
		{"blocking call of a suspending tool without elicitation", 38, "tools/call", map[string]any{"name": "conformance-approval",
			"arguments": map[string]any{}, "_meta": blocking}},
		{"blocking call that completes", 39, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"},
			"_meta": blocking}},
	}
	tests = append(tests, calls...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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
				// Compare reads of the run once it has ended.
				for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					got := wantResult(t, c.call("tasks/get", map[string]any{"taskId": task}, nil))
					if got["status"] != "working" && got["status"] != "input_required" {
						break
					}
				}
			}
			direct := rawPost(t, s.URL+"/mcp", tt.method, name, body)
			viaSDK := rawPost(t, sdkSrv.URL, tt.method, name, body)
			if tt.method == "tools/call" {
				direct.body, viaSDK.body = maskRun(direct.body), maskRun(viaSDK.body)
			}
			if direct.String() != viaSDK.String() {
				t.Errorf("direct answer:\n%s\nSDK answer:\n%s", direct, viaSDK)
			}
			if direct.status >= 500 || !strings.HasPrefix(direct.body, `{"jsonrpc":"2.0"`) {
				t.Errorf("answer %s", direct)
			}
		})
	}
}

// rawAnswer is what TestDirectMethodsMatchSDK compares.
type rawAnswer struct {
	status                    int
	contentType, cacheControl string
	body                      string
}

func (a rawAnswer) String() string {
	return http.StatusText(a.status) + " | " + a.contentType + " | " + a.cacheControl + "\n" + a.body
}

// rawPost posts a 2026-07-28 request with the standard headers and returns
// the answer as it came.
func rawPost(t testing.TB, url, method, name string, body []byte) rawAnswer {
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
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return rawAnswer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"),
		cacheControl: resp.Header.Get("Cache-Control"), body: buf.String()}
}

// maskRun replaces what differs between two starts of the same tool in an
// answer: the task id and the times.
func maskRun(body string) string {
	body = regexp.MustCompile(`"taskId":"[^"]*"`).ReplaceAllString(body, `"taskId":"*"`)
	return regexp.MustCompile(`"(createdAt|lastUpdatedAt)":"[^"]*"`).ReplaceAllString(body, `"$1":"*"`)
}
