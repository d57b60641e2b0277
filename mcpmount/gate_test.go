package mcpmount_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/edge"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// gateMeta is the _meta of a 2026-07-28 request without capabilities.
const gateMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// gateMount serves a keyless mount over the fake run service with one
// tool, delay (a number delayMs, a string label).
func gateMount(t *testing.T, mutate func(*mcpmount.Options)) (*httptest.Server, *runstest.Fake) {
	t.Helper()
	cat, err := catalog.NewStatic(signals.ToolSpec{Name: "delay", Description: "waits", TaskSupport: signals.TaskOptional,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"delayMs":{"type":"number"},"label":{"type":"string"}},"required":["delayMs"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	f := runstest.New()
	opts := mcpmount.Options{Runs: f, Catalog: cat, MaxBlockingWait: time.Second}
	if mutate != nil {
		mutate(&opts)
	}
	m, err := mcpmount.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return srv, f
}

// gateReply is an HTTP answer of the mount with its JSON-RPC error.
type gateReply struct {
	status int
	header http.Header
	raw    []byte
	id     json.RawMessage
	code   int
	msg    string
}

// gatePost sends body to the mount. Headers default to a 2026-07-28
// request of method (none when method is ""); hdr overrides them (an empty
// value deletes one); host overrides the Host header.
func gatePost(t *testing.T, srv *httptest.Server, httpMethod, method, host, body string, hdr map[string]string) gateReply {
	t.Helper()
	req, err := http.NewRequest(httpMethod, srv.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method != "" {
		req.Header.Set("MCP-Protocol-Version", mcpmount.ProtocolVersion)
		req.Header.Set("Mcp-Method", method)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if host != "" {
		req.Host = host
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := gateReply{status: resp.StatusCode, header: resp.Header, raw: raw}
	var msg struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &msg) == nil && msg.Error != nil {
		out.id, out.code, out.msg = msg.ID, msg.Error.Code, msg.Error.Message
	}
	return out
}

// wantRPCError fails unless r is a JSON-RPC error body (application/json)
// with the status and code whose message names every one of names.
func wantRPCError(t *testing.T, r gateReply, status, code int, names ...string) {
	t.Helper()
	if r.status != status || r.code != code || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("got HTTP %d %q %s, want HTTP %d with a JSON-RPC error %d", r.status, r.header.Get("Content-Type"), r.raw, status, code)
	}
	for _, n := range names {
		if !strings.Contains(r.msg, n) {
			t.Errorf("message %q does not name %q", r.msg, n)
		}
	}
}

func toolsList() string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + gateMeta + `}}`
}

// TestMCPGateRefusals: every refusal on /mcp is a JSON-RPC error with a
// JSON body, the transport-level ones included.
func TestMCPGateRefusals(t *testing.T) {
	srv, f := gateMount(t, nil)
	nested := func(levels int) string { // a tools/list whose message nests levels deep
		inner := levels - 2 // the message object and params
		return `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + gateMeta + `,"x":` +
			strings.Repeat("[", inner) + strings.Repeat("]", inner) + `}}`
	}
	tests := []struct {
		name         string
		httpMethod   string
		method, host string
		body         string
		hdr          map[string]string
		status, code int
		names        []string
	}{
		{"foreign origin", "POST", "tools/list", "", toolsList(), map[string]string{"Origin": "http://evil.example"}, 403, -32600, []string{"Origin"}},
		{"foreign host", "POST", "tools/list", "attacker.example", toolsList(), nil, 403, -32600, []string{"Host", "attacker.example"}},
		{"GET", "GET", "", "", "", map[string]string{"Accept": "text/event-stream"}, 405, -32600, []string{"POST"}},
		{"text/plain", "POST", "tools/list", "", toolsList(), map[string]string{"Content-Type": "text/plain"}, 415, -32600, []string{"Content-Type"}},
		{"too large", "POST", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + gateMeta + `,"x":"` + strings.Repeat("x", 5<<20) + `"}}`, nil, 413, -32600, []string{"bytes"}},
		{"object id, session-dialect", "POST", "", "", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, nil, 400, -32600, []string{"id"}},
		{"object id, 2026-07-28", "POST", "tools/list", "", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list","params":{` + gateMeta + `}}`, nil, 400, -32600, []string{"id"}},
		{"boolean id", "POST", "", "", `{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, nil, 400, -32600, []string{"id"}},
		{"fractional id", "POST", "", "", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, nil, 400, -32600, []string{"id", "1.5"}},
		{"session-dialect empty batch", "POST", "", "", `[]`, nil, 400, -32600, []string{"empty", "batch"}},
		{"session-dialect empty batch with spaces", "POST", "", "", " [ ] ", nil, 400, -32600, []string{"empty", "batch"}},
		{"session-dialect batch of a number", "POST", "", "", `[1]`, nil, 400, -32600, []string{"batch element 0"}},
		{"session-dialect batch with an object id", "POST", "", "", `[{"jsonrpc":"2.0","id":[1],"method":"tools/list"}]`, nil, 400, -32600, []string{"batch element 0", "id"}},
		{"nesting 1001", "POST", "tools/list", "", nested(1001), nil, 400, -32700, []string{"1001", "1000"}},
		{"nesting 5000, session-dialect", "POST", "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":` + strings.Repeat("[", 4998) + strings.Repeat("]", 4998) + `}}`, nil, 400, -32700, []string{"1000"}},
		{"Accept without text/event-stream", "POST", "tools/list", "", toolsList(), map[string]string{"Accept": "application/json"}, 400, -32600, []string{"Accept"}},
		{"no Accept", "POST", "tools/list", "", toolsList(), map[string]string{"Accept": ""}, 400, -32600, []string{"Accept"}},
		{"unrepresentable number in params", "POST", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + gateMeta + `,"x":1e309}}`, nil, 400, -32602, []string{"params.x", "1e309"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gatePost(t, srv, tt.httpMethod, tt.method, tt.host, tt.body, tt.hdr)
			wantRPCError(t, r, tt.status, tt.code, tt.names...)
		})
	}
	if f.StartCount() != 0 {
		t.Fatalf("%d runs started", f.StartCount())
	}

	// At the limits the SDK accepts, the request is served.
	if r := gatePost(t, srv, "POST", "tools/list", "", nested(1000), nil); r.status != 200 || r.code != 0 {
		t.Fatalf("nesting 1000 = %d %s", r.status, r.raw)
	}
	if r := gatePost(t, srv, "POST", "", "", `{"jsonrpc":"2.0","id":"s-1","method":"tools/list"}`, nil); r.status != 200 || r.code != 0 {
		t.Fatalf("string id = %d %s", r.status, r.raw)
	}
}

// TestMCPHostsAndOrigins: the public URL's host and origin and the
// allowed ones pass the same gate as REST's, set as the mount's options or
// in the Kit it shares with REST (whose settings then win).
func TestMCPHostsAndOrigins(t *testing.T) {
	fields := func(o *mcpmount.Options) {
		o.PublicURL = "https://wop.example.com"
		o.AllowedHosts = []string{"proxy.internal"}
		o.AllowedOrigins = []string{"https://app.example.com"}
	}
	k, err := edge.New(edge.Options{Runs: runstest.New(), Catalog: mustStatic(t), PublicURL: "https://wop.example.com",
		AllowedHosts: []string{"proxy.internal"}, AllowedOrigins: []string{"https://app.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	kit := func(o *mcpmount.Options) {
		o.Kit, o.Runs, o.Catalog = k, nil, nil
		o.AllowedHosts = []string{"evil.example"} // ignored: the Kit's gate serves
	}
	for name, mutate := range map[string]func(*mcpmount.Options){"options": fields, "kit": kit} {
		t.Run(name, func(t *testing.T) { checkHostsAndOrigins(t, mutate) })
	}
	if _, err := mcpmount.New(mcpmount.Options{Runs: runstest.New(), Catalog: mustStatic(t), PublicURL: "wop.example.com"}); err == nil {
		t.Fatal("New accepted a public URL without a scheme")
	}
}

// checkHostsAndOrigins checks the gate of a mount that mutate configures
// with the public URL https://wop.example.com, the allowed host
// proxy.internal and the allowed origin https://app.example.com.
func checkHostsAndOrigins(t *testing.T, mutate func(*mcpmount.Options)) {
	srv, _ := gateMount(t, mutate)
	tests := []struct {
		name, host, origin string
		want               int
	}{
		{"public URL host", "wop.example.com", "", 200},
		{"public URL origin", "", "https://wop.example.com", 200},
		{"allowed host", "proxy.internal", "", 200},
		{"allowed origin", "", "https://app.example.com", 200},
		{"loopback origin", "", "http://localhost:5173", 200},
		{"other host", "evil.example", "", 403},
		{"other origin", "", "https://evil.example", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.origin != "" {
				hdr["Origin"] = tt.origin
			}
			if r := gatePost(t, srv, "POST", "tools/list", tt.host, toolsList(), hdr); r.status != tt.want {
				t.Fatalf("= %d %s, want %d", r.status, r.raw, tt.want)
			}
		})
	}
}

func mustStatic(t *testing.T) *catalog.Static {
	c, err := catalog.NewStatic()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantToolInputError fails unless r is a CallToolResult (HTTP 200) with
// isError whose text names every one of names.
func wantToolInputError(t *testing.T, r gateReply, names ...string) {
	t.Helper()
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			ResultType string `json:"resultType"`
			IsError    bool   `json:"isError"`
			Content    []struct {
				Type, Text string
			} `json:"content"`
		} `json:"result"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.raw, &msg) != nil || msg.Result == nil ||
		!msg.Result.IsError || len(msg.Result.Content) != 1 || msg.Result.Content[0].Type != "text" {
		t.Fatalf("got HTTP %d %.300s, want a CallToolResult with isError", r.status, r.raw)
	}
	for _, n := range names {
		if !strings.Contains(msg.Result.Content[0].Text, n) {
			t.Errorf("text %q does not name %q", msg.Result.Content[0].Text, n)
		}
	}
}

// TestToolInputErrors: arguments the tool refuses (by its schema, too
// large, or holding a number no 64-bit float represents) are answered in
// both protocol eras with a CallToolResult with isError naming the
// property and the rule (SEP-1303), and no run starts; an unknown tool
// stays the JSON-RPC error -32602.
func TestToolInputErrors(t *testing.T) {
	srv, f := gateMount(t, nil)
	call := func(tool, args string, modern bool) string {
		meta := ""
		if modern {
			meta = gateMeta + ","
		}
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{` + meta + `"name":"` + tool + `","arguments":` + args + `}}`
	}
	tests := []struct {
		name  string
		args  string
		names []string
	}{
		{"missing required", `{"label":"x"}`, []string{`tool "delay"`, "required", "delayMs"}},
		{"wrong type", `{"delayMs":"soon"}`, []string{"delayMs: soon is of type string; its type must be number"}},
		{"not an object", `[1]`, []string{"JSON object"}},
		{"1e309", `{"delayMs":1e309}`, []string{`tool "delay"`, "delayMs", "1e309", "out of range"}},
		{"-1e400 nested", `{"delayMs":1,"label":"x","extra":{"list":[1,2,-1e400]}}`, []string{"extra.list[2]", "out of range"}},
		{"huge integer", `{"delayMs":1` + strings.Repeat("0", 400) + `}`, []string{"delayMs", "out of range"}},
		{"2 MB", `{"delayMs":1,"label":"` + strings.Repeat("x", 2<<20) + `"}`, []string{`tool "delay"`, "arguments too large", "bytes"}},
		{"3.9 MB", `{"delayMs":1,"label":"` + strings.Repeat("y", 3900<<10) + `"}`, []string{"arguments too large", fmt.Sprint(catalog.MaxArgumentsBytes)}},
	}
	post := func(t *testing.T, tool, args string, modern bool) gateReply {
		method, hdr := "tools/call", map[string]string{"Mcp-Name": tool}
		if !modern {
			method, hdr = "", nil
		}
		return gatePost(t, srv, "POST", method, "", call(tool, args, modern), hdr)
	}
	for _, tt := range tests {
		for _, modern := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/modern=%v", tt.name, modern), func(t *testing.T) {
				r := post(t, "delay", tt.args, modern)
				wantToolInputError(t, r, tt.names...)
				if !bytes.Equal(r.id, []byte("7")) && !bytes.Contains(r.raw, []byte(`"id":7`)) {
					t.Errorf("id of %.200s, want 7", r.raw)
				}
				if modern != bytes.Contains(r.raw, []byte(`"resultType":"complete"`)) {
					t.Errorf("resultType in %.200s: want \"complete\" exactly in 2026-07-28", r.raw)
				}
			})
		}
	}
	for _, modern := range []bool{true, false} {
		t.Run(fmt.Sprintf("unknown tool/modern=%v", modern), func(t *testing.T) {
			status := 400
			if !modern {
				status = 200
			}
			wantRPCError(t, post(t, "nope", `{"delayMs":1e309}`, modern), status, -32602, `unknown tool "nope"`)
		})
	}
	if f.StartCount() != 0 {
		t.Fatalf("%d runs started", f.StartCount())
	}
}

// TestOversizedInputResponse: a tasks/update answer larger than a run
// accepts is the -32602 naming the input, and nothing is resolved.
func TestOversizedInputResponse(t *testing.T) {
	srv, f := gateMount(t, nil)
	id, err := runid.New(auth.Anonymous().Tenant, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	f.Add(signals.Snapshot{RunID: id, Tool: "delay", Status: signals.StatusWaitingInput,
		Owner: signals.Owner{Tenant: auth.Anonymous().Tenant, Subject: auth.Anonymous()}, CreatedAt: now, UpdatedAt: now,
		Interrupts: []signals.Interrupt{{ID: "i-name", NodeID: "ask", Kind: signals.KindClarification, Title: "Name?", RequestedAt: now}}})
	taskID := runid.Project(id)
	content, _ := json.Marshal(map[string]string{"name": strings.Repeat("n", 2<<20)})
	body := `{"jsonrpc":"2.0","id":3,"method":"tasks/update","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},` +
		`"taskId":"` + taskID + `","inputResponses":{"i-name":{"action":"accept","content":` + string(content) + `}}}}`
	r := gatePost(t, srv, "POST", "tasks/update", "", body, map[string]string{"Mcp-Name": taskID})
	if r.code != -32602 || !strings.Contains(r.msg, "i-name") || !strings.Contains(r.msg, "too large") {
		t.Fatalf("tasks/update = %d %.300s, want -32602 naming the input", r.status, r.raw)
	}
	if n := len(f.ResolveCalls()); n != 0 {
		t.Fatalf("%d resolutions reached the run service", n)
	}
}
