package mcpmount

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/oidctest"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/signals"
)

// scopeResource is the resource the scope tests' tokens are issued for.
const scopeResource = "https://wop.example.test/mcp"

// scopeMetadata is its protected-resource metadata URL.
const scopeMetadata = "https://wop.example.test/.well-known/oauth-protected-resource/mcp"

// syncBuffer is an audit sink the test reads while the mount writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Sync() error { return nil }

// records are the audit records written so far.
func (b *syncBuffer) records(t *testing.T) []map[string]string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]string
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var rec map[string]string
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		delete(rec, "time")
		out = append(out, rec)
	}
	return out
}

// scopeStack is a mount whose callers log in at a real OpenID provider
// (internal/testing/oidctest): the test catalog plus refund, which needs
// the scope refunds:write, every request needing mcp, and the API key
// "ops-key" of tenant acme beside the tokens.
type scopeStack struct {
	*testServer
	mount    *Mount // serves stdio
	oauth    *auth.OAuth
	provider *oidctest.Provider
	trail    *syncBuffer
}

func newScopeStack(t *testing.T) *scopeStack {
	t.Helper()
	p := oidctest.Start(t, oidctest.Options{Audience: []string{scopeResource}})
	o, err := auth.NewOAuth(auth.OAuthOptions{Issuers: []string{p.Issuer}, Resource: scopeResource,
		TenantClaim: "tenant", RequiredScopes: []string{"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	select {
	case <-o.Ready(p.Issuer):
	case <-time.After(30 * time.Second):
		t.Fatalf("issuer not ready: %v", o.Unreachable())
	}
	s := &scopeStack{oauth: o, provider: p, trail: &syncBuffer{}}
	refund := signals.ToolSpec{Name: "refund", Description: "refunds an order", TaskSupport: signals.TaskOptional,
		Scopes: []string{"refunds:write"}}
	var stdio Options
	s.testServer = newTestServer(t, func(opts *Options) {
		opts.Catalog = staticCatalog(t, append(testCatalog(), refund)...)
		opts.Authenticate = o.Authenticator(keysFor(t, "ops-key=acme:ops"))
		opts.OAuth = o
		opts.ScopeRefused = audit.New(zapcore.AddSync(s.trail)).ScopeRefused
		stdio = *opts
	})
	// A mount of the same options, run fake and trail serves stdio.
	m, err := New(stdio)
	if err != nil {
		t.Fatal(err)
	}
	s.mount = m
	return s
}

// token is a token of the provider for alice of tenant acme with scope.
func (s *scopeStack) token(t *testing.T, scope string) string {
	t.Helper()
	c := s.provider.Claims("alice-1", []string{scopeResource}, 5*time.Minute)
	c["tenant"], c["scope"] = "acme", scope
	tok, err := s.provider.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// toolNames lists the names in a tools/list result.
func toolNames(res map[string]any) []string {
	var out []string
	tools, _ := res["tools"].([]any)
	for _, tl := range tools {
		out = append(out, tl.(map[string]any)["name"].(string))
	}
	return out
}

// The challenge of a token without refunds:write calling refund.
const refundChallenge = `Bearer error="insufficient_scope", error_description="insufficient scope: the tool refund needs the scope mcp refunds:write", ` +
	`resource_metadata="` + scopeMetadata + `", scope="mcp refunds:write"`

// TestToolScopes: with tokens of a real OpenID provider, a tool that needs
// a scope is listed in every dialect (2026-07-28, 2025-11-25, 2025-06-18,
// stdio) only to a token that grants it and to an API key; a call of it
// (a first call, an MRTR retry, a task) by a token without it is refused
// before any run starts, over HTTP with 403 and the insufficient_scope
// challenge naming the scopes and the metadata, over stdio with a JSON-RPC
// error naming them, and each refusal is audited; the token with the
// scope and the API key call it.
func TestToolScopes(t *testing.T) {
	s := newScopeStack(t)
	narrow, wide := s.token(t, "mcp"), s.token(t, "mcp refunds:write")
	all := "acme_only,ask_first,greet,refund,required_job,slow"
	without := "acme_only,ask_first,greet,required_job,slow"

	modern := s.client(t, tasksCaps())
	for _, tc := range []struct{ name, key, want string }{{"narrow token", narrow, without}, {"wide token", wide, all}, {"API key", "ops-key", all}} {
		modern.key = tc.key
		if got := strings.Join(toolNames(wantResult(t, modern.call("tools/list", nil, nil))), ","); got != tc.want+","+runListTool {
			t.Errorf("2026-07-28 tools/list, %s: %s, want %s", tc.name, got, tc.want)
		}
		for _, version := range []string{"2025-11-25", "2025-06-18"} {
			sessionless := &sessionlessClient{t: t, url: s.URL, key: tc.key, version: version}
			if got := strings.Join(toolNames(wantResult(t, sessionless.call("tools/list", nil))), ","); got != tc.want+","+companionTools {
				t.Errorf("%s tools/list, %s: %s, want %s", version, tc.name, got, tc.want)
			}
		}
	}

	// A token without the scope calls refund: 403, before any run.
	refused := func(what string, r rpc) {
		t.Helper()
		if r.Status != http.StatusForbidden || r.Error == nil || r.Error.Code != wire.CodeInvalidRequest ||
			!strings.Contains(r.Error.Message, "refunds:write") || !strings.HasPrefix(r.Error.Message, "forbidden: ") {
			t.Errorf("%s: HTTP %d %s, want 403 naming refunds:write", what, r.Status, r.Raw)
		}
		if got := r.Header.Get("WWW-Authenticate"); got != refundChallenge {
			t.Errorf("%s: WWW-Authenticate %s, want %s", what, got, refundChallenge)
		}
		if bytes.Contains(r.Raw, []byte(narrow)) {
			t.Errorf("%s: the answer holds the token", what)
		}
	}
	modern.key = narrow
	refused("2026-07-28 call", modern.call("tools/call", map[string]any{"name": "refund", "arguments": map[string]any{}}, nil))
	refused("2026-07-28 MRTR retry", modern.call("tools/call", map[string]any{"name": "refund", "arguments": map[string]any{},
		"requestState": "AAAA", "inputResponses": map[string]any{}}, nil))
	for _, version := range []string{"2025-11-25", "2025-06-18"} {
		sessionless := &sessionlessClient{t: t, url: s.URL, key: narrow, version: version}
		refused(version+" call", sessionless.call("tools/call", map[string]any{"name": "refund", "arguments": map[string]any{}}))
	}
	sessionless := &sessionlessClient{t: t, url: s.URL, key: narrow, version: "2025-11-25"}
	refused("2025-11-25 task", sessionless.call("tools/call", map[string]any{"name": "refund", "arguments": map[string]any{}, "task": map[string]any{}}))
	if n := s.runs.StartCount(); n != 0 {
		t.Fatalf("%d runs started by refused calls", n)
	}
	// Other tools, and tasks, are unchanged for it.
	wantResult(t, modern.call("tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "A"}}, nil))

	// stdio: the caller of the token, the same refusal as a JSON-RPC error.
	caller, err := s.oauth.Verify(context.Background(), narrow)
	if err != nil {
		t.Fatal(err)
	}
	peer := serveStdio(t, s.mount, caller)
	peer.send(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
	peer.response(t)
	peer.send(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	peer.send(t, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	res, _ := peer.response(t)["result"].(map[string]any)
	if got := strings.Join(toolNames(res), ","); got != without+","+companionTools {
		t.Errorf("stdio tools/list: %s, want %s", got, without)
	}
	peer.send(t, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"refund","arguments":{}}}`))
	e, _ := peer.response(t)["error"].(map[string]any)
	if msg, _ := e["message"].(string); e["code"] != float64(wire.CodeInvalidRequest) || !strings.Contains(msg, "insufficient scope") ||
		!strings.Contains(msg, "refunds:write") {
		t.Errorf("stdio tools/call: error %v, want -32600 naming refunds:write", e)
	}
	if n := s.runs.StartCount(); n != 1 {
		t.Fatalf("%d runs started, want greet's alone", n)
	}

	// The wide token and the API key call it.
	for _, key := range []string{wide, "ops-key"} {
		modern.key = key
		wantResult(t, modern.call("tools/call", map[string]any{"name": "refund", "arguments": map[string]any{}}, nil))
	}
	if n := s.runs.StartCount(); n != 3 {
		t.Fatalf("%d runs started, want 3", n)
	}
	// A task of the tool, started with the scope, is read and cancelled
	// with a token of its tenant without it: scopes limit calls, not tasks.
	modern.key = wide
	task, _ := wantResult(t, modern.call("tools/call", map[string]any{"name": "refund", "arguments": map[string]any{}}, nil))["taskId"].(string)
	modern.key = narrow
	if got := wantResult(t, modern.call("tasks/get", map[string]any{"taskId": task}, nil)); got["taskId"] != task || task == "" {
		t.Errorf("tasks/get of the tool's task without its scope: %v", got)
	}
	wantResult(t, modern.call("tasks/cancel", map[string]any{"taskId": task}, nil))

	// One record per refusal: who, which tool, the scopes needed.
	refusal := func(transport string) map[string]string {
		return map[string]string{"action": "start", "outcome": "refused", "reason": "insufficient-scope", "tool": "refund",
			"tenant": "acme", "issuer": s.provider.Issuer, "subject": "alice-1", "transport": transport, "scope": "mcp refunds:write"}
	}
	want := slices.Repeat([]map[string]string{refusal("mcp")}, 6)
	if got := s.trail.records(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit records:\n got %v\nwant %v", got, want)
	}
}
