package mcpmount

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestValidationOrder(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client(t, tasksCaps())
	meta := func(version string, caps any) map[string]any {
		m := map[string]any{"io.modelcontextprotocol/protocolVersion": version}
		if caps != nil {
			m["io.modelcontextprotocol/clientCapabilities"] = caps
		}
		return m
	}
	tests := []struct {
		name   string
		method string
		params map[string]any
		hdr    map[string]string
		status int
		code   int
	}{
		{name: "missing _meta", method: "server/discover", params: map[string]any{"_meta": nil},
			status: 400, code: -32602},
		{name: "missing protocolVersion", method: "server/discover",
			params: map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{}}},
			status: 400, code: -32602},
		{name: "missing clientCapabilities", method: "server/discover",
			params: map[string]any{"_meta": meta(ProtocolVersion, nil)}, status: 400, code: -32602},
		{name: "clientCapabilities not an object", method: "server/discover",
			params: map[string]any{"_meta": meta(ProtocolVersion, "all")}, status: 400, code: -32602},
		{name: "_meta checked before headers", method: "server/discover", params: map[string]any{"_meta": nil},
			hdr: map[string]string{"Mcp-Method": "tools/list"}, status: 400, code: -32602},
		{name: "header version differs from _meta", method: "server/discover",
			params: map[string]any{"_meta": meta("v999.0.0", map[string]any{})}, status: 400, code: -32020},
		{name: "missing version header", method: "server/discover",
			hdr: map[string]string{"MCP-Protocol-Version": ""}, status: 400, code: -32020},
		{name: "unsupported version", method: "server/discover",
			params: map[string]any{"_meta": meta("v999.0.0", map[string]any{})},
			hdr:    map[string]string{"MCP-Protocol-Version": "v999.0.0"}, status: 400, code: -32022},
		{name: "missing Mcp-Method", method: "tools/list", hdr: map[string]string{"Mcp-Method": ""}, status: 400, code: -32020},
		{name: "Mcp-Method mismatch", method: "tools/call", params: map[string]any{"name": "greet", "arguments": map[string]any{"name": "x"}},
			hdr: map[string]string{"Mcp-Method": "tasks/get"}, status: 400, code: -32020},
		{name: "missing Mcp-Name on tools/call", method: "tools/call", params: map[string]any{"name": "greet"},
			hdr: map[string]string{"Mcp-Name": ""}, status: 400, code: -32020},
		{name: "Mcp-Name mismatch on tools/call", method: "tools/call", params: map[string]any{"name": "greet"},
			hdr: map[string]string{"Mcp-Name": "slow"}, status: 400, code: -32020},
		{name: "missing Mcp-Name on tasks/get", method: "tasks/get", params: map[string]any{"taskId": "acme~2Fxxxxxxxxxxxxxxxxxxxxxxxx"},
			hdr: map[string]string{"Mcp-Name": ""}, status: 400, code: -32020},
		{name: "Mcp-Name mismatch on tasks/update", method: "tasks/update", params: map[string]any{"taskId": "a", "inputResponses": map[string]any{}},
			hdr: map[string]string{"Mcp-Name": "b"}, status: 400, code: -32020},
		{name: "Mcp-Name mismatch on tasks/cancel", method: "tasks/cancel", params: map[string]any{"taskId": "a"},
			hdr: map[string]string{"Mcp-Name": "b"}, status: 400, code: -32020},
		{name: "invalid base64 sentinel", method: "tasks/get", params: map[string]any{"taskId": "a"},
			hdr: map[string]string{"Mcp-Name": "=?base64?***?="}, status: 400, code: -32020},
		{name: "headers checked before method", method: "tasks/list", hdr: map[string]string{"Mcp-Method": "tools/list"},
			status: 400, code: -32020},
		{name: "version checked before method", method: "tasks/list",
			params: map[string]any{"_meta": meta("v999.0.0", map[string]any{})},
			hdr:    map[string]string{"MCP-Protocol-Version": "v999.0.0"}, status: 400, code: -32022},
		{name: "tasks/result removed", method: "tasks/result", params: map[string]any{"taskId": "x"}, status: 404, code: -32601},
		{name: "tasks/list removed", method: "tasks/list", status: 404, code: -32601},
		{name: "initialize removed", method: "initialize", status: 404, code: -32601},
		{name: "ping removed", method: "ping", status: 404, code: -32601},
		{name: "logging/setLevel removed", method: "logging/setLevel", status: 404, code: -32601},
		{name: "prompts/list not served", method: "prompts/list", status: 404, code: -32601},
		{name: "unknown method", method: "unknown/method", status: 404, code: -32601},
		{name: "gate before lookup", method: "tasks/get", params: map[string]any{"taskId": "nope",
			"_meta": meta(ProtocolVersion, map[string]any{})}, status: 400, code: -32021},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := tt.params
			if params != nil {
				if m, ok := params["_meta"]; ok && m == nil {
					params = map[string]any{}
					for k, v := range tt.params {
						if k != "_meta" {
							params[k] = v
						}
					}
					params["_meta"] = map[string]any{}
				}
			}
			r := c.call(tt.method, params, tt.hdr)
			wantError(t, r, tt.status, tt.code)
			if string(r.ID) != itoa(c.id) {
				t.Errorf("error id = %s, want %d", r.ID, c.id)
			}
		})
	}
	if n := s.runs.StartCount(); n != 0 {
		t.Fatalf("%d runs started by rejected requests", n)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestUnsupportedVersionData(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client(t, map[string]any{})
	r := c.call("server/discover", map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "v999.0.0",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}}, map[string]string{"MCP-Protocol-Version": "v999.0.0"})
	wantError(t, r, 400, -32022)
	var data struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}
	if err := json.Unmarshal(r.Error.Data, &data); err != nil || data.Requested != "v999.0.0" ||
		len(data.Supported) != 1 || data.Supported[0] != ProtocolVersion {
		t.Fatalf("data = %s", r.Error.Data)
	}
}

func TestParseErrorAndNotification(t *testing.T) {
	s := newTestServer(t, nil)
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": ProtocolVersion, "Mcp-Method": "tools/list"}
	r := post(t, s.URL, hdr, []byte(`{"jsonrpc":"2.0","id":1,`))
	wantError(t, r, 400, -32700)

	// A notification is accepted before any header or _meta check.
	r = post(t, s.URL, map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
		[]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if r.Status != http.StatusAccepted || len(r.Raw) != 0 {
		t.Fatalf("notification: HTTP %d body %q", r.Status, r.Raw)
	}

	r = post(t, s.URL, hdr, []byte(`{"jsonrpc":"1.0","id":7,"method":"tools/list"}`))
	wantError(t, r, 400, -32600)
	if string(r.ID) != "7" {
		t.Errorf("id = %s", r.ID)
	}
	r = post(t, s.URL, hdr, []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`))
	wantError(t, r, 400, -32600)
}

func TestBase64NameHeader(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client(t, tasksCaps())
	enc := func(v string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?=" }

	r := c.call("tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "b64"}},
		map[string]string{"Mcp-Name": enc("greet")})
	res := wantResult(t, r)
	if txt := res["content"].([]any)[0].(map[string]any)["text"]; txt != "Hello, b64!" {
		t.Fatalf("text = %v", txt)
	}

	task := wantResult(t, c.call("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 5}}, nil))
	id := task["taskId"].(string)
	got := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, map[string]string{"Mcp-Name": enc(id)}))
	if got["taskId"] != id {
		t.Fatalf("taskId = %v", got["taskId"])
	}
	wantError(t, c.call("tasks/get", map[string]any{"taskId": id}, map[string]string{"Mcp-Name": enc(id + "x")}), 400, -32020)
}

func TestMethodNotAllowed(t *testing.T) {
	s := newTestServer(t, nil)
	for _, method := range []string{http.MethodGet, http.MethodDelete, http.MethodPut} {
		req, _ := http.NewRequest(method, s.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s: status %d Allow %q", method, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
}

func TestOriginAndHost(t *testing.T) {
	s := newTestServer(t, func(o *Options) {
		o.AllowedOrigins = []string{"https://app.example.com"}
		o.AllowedHosts = []string{"mcp.example.com"}
	})
	c := s.client(t, map[string]any{})
	host := strings.TrimPrefix(s.URL, "http://")
	tests := []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"no origin", nil, 200},
		{"localhost origin", map[string]string{"Origin": "http://localhost:1234"}, 200},
		{"loopback origin", map[string]string{"Origin": "http://" + host}, 200},
		{"configured origin", map[string]string{"Origin": "https://app.example.com"}, 200},
		{"foreign origin", map[string]string{"Origin": "http://evil.example.com"}, 403},
		{"null origin", map[string]string{"Origin": "null"}, 403},
		{"rebinding host", map[string]string{"Host": "evil.example.com", "Origin": "http://evil.example.com"}, 403},
		{"rebinding host without origin", map[string]string{"Host": "evil.example.com"}, 403},
		{"configured host behind a local proxy", map[string]string{"Host": "mcp.example.com"}, 200},
		{"configured host with port", map[string]string{"Host": "mcp.example.com:443"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.callWithHost("server/discover", tt.hdr)
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.status, r.Raw)
			}
		})
	}
}

// callWithHost is call with an optional Host override (Go sets Host from
// Request.Host, not from the header map).
func (c *client) callWithHost(method string, hdr map[string]string) rpc {
	c.t.Helper()
	if h, ok := hdr["Host"]; ok {
		orig := c.url
		defer func() { c.url = orig }()
		rest := map[string]string{}
		for k, v := range hdr {
			if k != "Host" {
				rest[k] = v
			}
		}
		return c.callHost(method, h, rest)
	}
	return c.call(method, nil, hdr)
}

func (c *client) callHost(method, host string, hdr map[string]string) rpc {
	c.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": map[string]any{
		"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": ProtocolVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}}})
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(string(body)))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return rpc{Status: resp.StatusCode}
}

func TestAuth(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.Authenticate = keysFor(t, "ka=acme:alice,kb=globex:bob").Authenticate })
	c := s.client(t, tasksCaps())

	r := c.call("tools/list", nil, nil)
	if r.Status != http.StatusUnauthorized || r.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no key: HTTP %d", r.Status)
	}
	c.key = "wrong"
	if r := c.call("tools/list", nil, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("bad key: HTTP %d", r.Status)
	}

	names := func(key string) []string {
		c.key = key
		res := wantResult(t, c.call("tools/list", nil, nil))
		var out []string
		for _, tl := range res["tools"].([]any) {
			out = append(out, tl.(map[string]any)["name"].(string))
		}
		return out
	}
	if got := strings.Join(names("ka"), ","); got != "acme_only,ask_first,greet,required_job,slow,"+runListTool {
		t.Errorf("acme tools = %s", got)
	}
	if got := strings.Join(names("kb"), ","); got != "ask_first,greet,required_job,slow,"+runListTool {
		t.Errorf("globex tools = %s", got)
	}
	// A tool another tenant cannot see cannot be called either.
	c.key = "kb"
	wantError(t, c.call("tools/call", map[string]any{"name": "acme_only", "arguments": map[string]any{}}, nil), 400, -32602)

	// The run's owner comes from the credential, never from _meta.
	c.key = "ka"
	wantResult(t, c.call("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 1}}, nil))
	if got := s.runs.LastStart().Caller; got.Tenant != "acme" || got.SubjectID != "alice" {
		t.Fatalf("run caller = %+v", got)
	}
}
