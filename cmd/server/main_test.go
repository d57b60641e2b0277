package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
)

// mcpMeta is the _meta of a 2026-07-28 request declaring the Tasks
// extension.
var mcpMeta = map[string]any{
	"io.modelcontextprotocol/protocolVersion": "2026-07-28",
	"io.modelcontextprotocol/clientCapabilities": map[string]any{
		"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}},
	},
}

// rpcResponse is a JSON-RPC response.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mcpCall posts one 2026-07-28 request to the mount (params' _meta, if
// any, added to mcpMeta).
func mcpCall(t *testing.T, addr, method, name string, params map[string]any) rpcResponse {
	t.Helper()
	m := maps.Clone(mcpMeta)
	if extra, ok := params["_meta"].(map[string]any); ok {
		maps.Copy(m, extra)
	}
	params["_meta"] = m
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if i := bytes.Index(raw, []byte("data: ")); i >= 0 { // an SSE answer
		raw = raw[i+len("data: "):]
	}
	var r rpcResponse
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&r); err != nil {
		t.Fatalf("%s: %d %s: %v", method, resp.StatusCode, raw, err)
	}
	return r
}

// TestSearchAttributesMissingServer runs the server's assembly against a
// Temporal whose namespace lacks the run search attributes and refuses to
// add them (Temporal Cloud without admin rights): it starts, its worker
// publishes, tools are listed, and /healthz, tools/call and GET /runs say
// what is missing and how to create it.
func TestSearchAttributesMissingServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devtemporal.Start(ctx, devtemporal.Options{NoSearchAttributes: true})
	if err != nil {
		t.Fatalf("devtemporal: %v", err)
	}
	defer func() { _ = srv.Stop() }()
	deny := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.HasSuffix(method, "/AddSearchAttributes") {
			return serviceerror.NewPermissionDenied("Request unauthorized.", "")
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	cfg := config.Config{
		HTTPAddr: "127.0.0.1:0", TaskQueue: testenv.UniqueTaskQueue(t), Worker: true, Remote: true,
		Client: client.Options{HostPort: srv.Address(), Namespace: srv.Namespace(),
			ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(deny)}}},
	}
	logger := testenv.Logger()
	reg, err := tools.DefaultRegistry(tools.NewActivities(logger, tools.ActivityOptions{OutputDir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	ad, err := app.NewServer(app.ServerOptions{Registry: reg, Authenticate: auth.AnonymousAuthenticator})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(ctx, cfg, logger, ad.Parts())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = a.Shutdown(context.Background()) }()

	// The worker's tools are listed as soon as the server is ready.
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	r := mcpCall(t, a.HTTPAddr, "tools/list", "", map[string]any{})
	if r.Error != nil || json.Unmarshal(r.Result, &list) != nil {
		t.Fatalf("tools/list = %+v %s", r.Error, r.Result)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	// The three example tools, and the list tool every client is listed.
	if got := strings.Join(names, ","); got != "approve_expense,delay,publish_report,openwop_run_list" {
		t.Fatalf("tools/list names %s, want the example tools and openwop_run_list", got)
	}

	wantMessage := func(what, msg string) {
		t.Helper()
		for _, want := range []string{"OpenWOPTenant", "OpenWOPStatus", "temporal operator search-attribute create --namespace " + srv.Namespace(), "tcld namespace search-attributes add"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s lacks %q: %s", what, want, msg)
			}
		}
	}
	r = mcpCall(t, a.HTTPAddr, "tools/call", "delay", map[string]any{"name": "delay", "arguments": map[string]any{"delayMs": 1}})
	if r.Error == nil {
		t.Fatalf("tools/call = %s, want an error", r.Result)
	}
	t.Logf("tools/call error %d: %s", r.Error.Code, r.Error.Message)
	wantMessage("tools/call error", r.Error.Message)

	resp, err := http.Get("http://" + a.HTTPAddr + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || body.Error.Code != "search_attributes_missing" {
		t.Fatalf("GET /runs = %d %+v, want 503 search_attributes_missing", resp.StatusCode, body)
	}
	t.Logf("GET /runs: %d %s: %s", resp.StatusCode, body.Error.Code, body.Error.Message)
	wantMessage("GET /runs error", body.Error.Message)

	resp, err = http.Get("http://" + a.HTTPAddr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h app.Health
	_ = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || h.Status != "unhealthy" || h.SearchAttributes == nil {
		t.Fatalf("/healthz = %d %+v, want 503 unhealthy", resp.StatusCode, h)
	}
	wantMessage("/healthz", h.SearchAttributes.Message)
}

// TestShutdownEndsSessions: a session-era MCP client holds its session's
// GET stream open; a graceful shutdown ends the session, and with it the
// stream, instead of waiting for the stream until the drain times out.
func TestShutdownEndsSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devtemporal.Start(ctx, devtemporal.Options{})
	if err != nil {
		t.Fatalf("devtemporal: %v", err)
	}
	defer func() { _ = srv.Stop() }()
	cfg := config.Config{
		HTTPAddr: "127.0.0.1:0", TaskQueue: testenv.UniqueTaskQueue(t), Worker: true, Remote: true,
		Client: client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()},
	}
	logger := testenv.Logger()
	reg, err := tools.DefaultRegistry(tools.NewActivities(logger, tools.ActivityOptions{OutputDir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	ad, err := app.NewServer(app.ServerOptions{Registry: reg, Authenticate: auth.AnonymousAuthenticator})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(ctx, cfg, logger, ad.Parts())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	url := "http://" + a.HTTPAddr + "/mcp"
	send := func(method string, body string, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return resp
	}
	resp := send(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
		`"capabilities":{},"clientInfo":{"name":"shutdown","version":"0"}}}`, nil)
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, session)
	}
	hdr := map[string]string{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
	resp = send(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	resp.Body.Close()
	stream := send(http.MethodGet, "", hdr)
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: HTTP %d", stream.StatusCode)
	}
	streamEnded := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stream.Body)
		close(streamEnded)
	}()
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := a.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown with a session open: %v", err)
	}
	select {
	case <-streamEnded:
	case <-time.After(10 * time.Second):
		t.Fatal("the session's GET stream did not end")
	}
}
