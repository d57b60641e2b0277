package mcpmount

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
	"github.com/openwop/temporal-mcp/mcpmount/internal/modern"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// The fake run service of the protocol tests is a runs.Backend.
var _ runs.Backend = (*runstest.Fake)(nil)

// testCatalog is a small catalog covering every task support level, a
// pre-run input and a tenant-scoped tool.
func testCatalog() []signals.ToolSpec {
	return []signals.ToolSpec{
		{Name: "slow", Description: "sleeps", TaskSupport: signals.TaskOptional,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"integer","minimum":0},"label":{"type":"string"}},"required":["seconds"]}`)},
		{Name: "greet", Description: "says hello", TaskSupport: signals.TaskForbidden,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		{Name: "required_job", Description: "task only", TaskSupport: signals.TaskRequired},
		{Name: "ask_first", Description: "asks a name first", TaskSupport: signals.TaskOptional,
			PreRunInputs: []signals.PreRunInput{{Key: "user_name", Message: "Your name?",
				Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}}},
		{Name: "acme_only", Description: "for acme", TaskSupport: signals.TaskOptional, Tenants: []string{"acme"}},
	}
}

// staticCatalog is a catalog.Static of specs.
func staticCatalog(t testing.TB, specs ...signals.ToolSpec) *catalog.Static {
	t.Helper()
	c, err := catalog.NewStatic(specs...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// greetOnStart completes greet runs at once, like the fixture.
func greetOnStart(req runs.NewRun, s *signals.Snapshot) {
	if req.Tool.Name == "greet" {
		var a struct{ Name string }
		_ = json.Unmarshal(req.Arguments, &a)
		completeWith(s, "Hello, "+a.Name+"!")
	}
}

// completeWith marks a run completed with a text result.
func completeWith(s *signals.Snapshot, text string) {
	s.Status = signals.StatusCompleted
	s.StatusMessage = "the run is completed"
	s.Result = &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: text}}}
	s.Outputs = json.RawMessage(`{}`)
}

// cancelAtOnce ends a run as soon as its cancellation is requested, as a
// tool that honours cancellation at once.
func cancelAtOnce(s *signals.Snapshot) {
	s.Status, s.StatusMessage = signals.StatusCancelled, signals.StatusCancelled.Message()
}

type testServer struct {
	*httptest.Server
	runs *runstest.Fake
}

// newTestServer serves a mount over the fake run service, with the
// testCatalog tools and no keys (every caller is anonymous).
func newTestServer(t *testing.T, mutate func(*Options)) *testServer {
	t.Helper()
	f := runstest.New()
	f.OnStart(greetOnStart)
	f.OnCancel(cancelAtOnce)
	opts := Options{Runs: f, Catalog: staticCatalog(t, testCatalog()...), Name: "test-mount", Version: "1.2.3"}
	if mutate != nil {
		mutate(&opts)
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return &testServer{Server: srv, runs: f}
}

// rpc is a decoded JSON-RPC response.
type rpc struct {
	Status int
	Header http.Header
	// Length is the response's Content-Length (-1: none, as a chunked
	// response has).
	Length int64
	ID     json.RawMessage `json:"id"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	Raw []byte
}

// client sends 2026-07-28 requests the way the conformance harness does.
type client struct {
	t    *testing.T
	url  string
	key  string
	caps map[string]any
	id   int
}

func (s *testServer) client(t *testing.T, caps map[string]any) *client {
	return &client{t: t, url: s.URL, caps: caps}
}

func tasksCaps() map[string]any {
	return map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{ExtensionTasks: map[string]any{}}}
}

// call sends method with params plus the _meta triple and the standard
// headers. Entries of hdr override headers; an empty value deletes one.
func (c *client) call(method string, params map[string]any, hdr map[string]string) rpc {
	c.t.Helper()
	c.id++
	if params == nil {
		params = map[string]any{}
	}
	if _, ok := params["_meta"]; !ok {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    ProtocolVersion,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "0"},
			"io.modelcontextprotocol/clientCapabilities": c.caps,
		}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	h := map[string]string{
		"Content-Type":         "application/json",
		"Accept":               "application/json, text/event-stream",
		"MCP-Protocol-Version": ProtocolVersion,
		"Mcp-Method":           method,
	}
	if name, ok := modern.NameField(method); ok {
		if v, ok := params[name].(string); ok {
			h["Mcp-Name"] = v
		}
	}
	if c.key != "" {
		h["Authorization"] = "Bearer " + c.key
	}
	for k, v := range hdr {
		h[k] = v
	}
	return post(c.t, c.url, h, body)
}

func post(t *testing.T, url string, hdr map[string]string, body []byte) rpc {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := rpc{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				raw = []byte(d)
			}
		}
	}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("decode response %q: %v", raw, err)
		}
	}
	out.Status, out.Header, out.Raw, out.Length = resp.StatusCode, resp.Header, raw, resp.ContentLength
	return out
}

// wantError fails unless r is a JSON-RPC error with code and HTTP status.
func wantError(t *testing.T, r rpc, status, code int) {
	t.Helper()
	if r.Status != status || r.Error == nil || r.Error.Code != code {
		t.Fatalf("want HTTP %d code %d, got HTTP %d body %s", status, code, r.Status, r.Raw)
	}
}

// wantResult fails unless r is a successful result and returns it.
func wantResult(t *testing.T, r rpc) map[string]any {
	t.Helper()
	if r.Status != http.StatusOK || r.Error != nil || r.Result == nil {
		t.Fatalf("want a result, got HTTP %d body %s", r.Status, r.Raw)
	}
	return r.Result
}

func keysFor(t *testing.T, spec string) *auth.Keys {
	t.Helper()
	ks, err := auth.ParseKeys(spec)
	if err != nil {
		t.Fatal(err)
	}
	k, err := auth.New(ks)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
