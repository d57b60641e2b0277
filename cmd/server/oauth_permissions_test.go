package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/testing/oidctest"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/workflows"
)

// The tools of the permission tests: scoped_refund needs the scope
// refunds:write; finance_gate waits for an approval that only the group
// finance may give.
const (
	scopedTool  = "scoped_refund"
	refundScope = "refunds:write"
	gateTool    = "finance_gate"
)

type orderIn struct {
	OrderID string `json:"orderId"`
}

func scopedRefund(_ workflow.Context, in orderIn) (string, error) {
	return "refunded " + in.OrderID, nil
}

func financeGate(ctx workflow.Context, in orderIn) (string, error) {
	d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "gate", Title: "Refund " + in.OrderID + "?",
		Approvers: []string{signals.GroupPrefix + "finance"}})
	if err != nil {
		return "", err
	}
	return d.Action, nil
}

// trailBuffer is the audit trail's sink in the test.
type trailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *trailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *trailBuffer) Sync() error { return nil }

func (b *trailBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// permStack is the assembled server (in-process worker, embedded
// Temporal) with the permission tools, tokens of a real OpenID provider
// (every request needs the scope mcp; groups in the claim groups) and its
// audit trail in a buffer.
type permStack struct {
	*oauthServer
	provider *oidctest.Provider
	trail    *trailBuffer
}

func startPermStack(t *testing.T) *permStack {
	t.Helper()
	addr := freeAddr(t)
	base := "http://" + addr
	p := oidctest.Start(t, oidctest.Options{Audience: []string{base + auth.ResourcePath}})
	o, err := auth.NewOAuth(auth.OAuthOptions{Issuers: []string{p.Issuer}, Resource: base + auth.ResourcePath,
		TenantClaim: "tenant", GroupsClaim: "groups", RequiredScopes: []string{"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	reg, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool(scopedTool, "Refund an order at once.", scopedRefund, workflows.WithScopes(refundScope)),
		workflows.NewTool(gateTool, "Refund an order once finance approves.", financeGate, workflows.Suspends()),
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &permStack{oauthServer: &oauthServer{base: base, oauth: o}, provider: p, trail: &trailBuffer{}}
	srv, err := app.NewServer(app.ServerOptions{Registry: reg, Authenticate: o.Authenticator(nil), OAuth: o,
		Audit: audit.New(zapcore.AddSync(s.trail)), PublicURL: base, Worker: true})
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Temporal(t)
	cfg := config.Config{HTTPAddr: addr, TaskQueue: testenv.UniqueTaskQueue(t), Worker: true, Remote: true,
		Client: client.Options{HostPort: env.Address, Namespace: env.Namespace}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.Start(ctx, cfg, testenv.Logger(), srv.Parts())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	select {
	case <-o.Ready(p.Issuer):
	case <-time.After(30 * time.Second):
		t.Fatalf("issuer not ready: %v", o.Unreachable())
	}
	return s
}

// token is a token of the provider for sub of tenant with groups and
// scope.
func (s *permStack) token(t *testing.T, sub, tenant string, groups []string, scope string) string {
	t.Helper()
	c := s.provider.Claims(sub, []string{s.base + auth.ResourcePath}, 5*time.Minute)
	c["tenant"], c["groups"], c["scope"] = tenant, groups, scope
	tok, err := s.provider.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// mcp sends one 2026-07-28 request and returns the response and its
// body. Only tasks/* declare the Tasks extension: a tools/call waits for
// its run.
func (s *permStack) mcp(t *testing.T, token, method, name string, params map[string]any) (*http.Response, []byte) {
	t.Helper()
	caps := map[string]any{}
	if strings.HasPrefix(method, "tasks/") {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, s.base+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp, buf.Bytes()
}

// listed reports the tools a tools/list answer and a GET /workflows
// answer name.
func (s *permStack) listed(t *testing.T, token string) (mcpTools, restTools string) {
	t.Helper()
	_, body := s.mcp(t, token, "tools/list", "", map[string]any{})
	var l struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	_ = json.Unmarshal(body, &l)
	var names []string
	for _, tl := range l.Result.Tools {
		// The companion tools are the server's own, offered to every
		// caller that declared neither tasks nor elicitation.
		if !strings.HasPrefix(tl.Name, signals.ReservedToolPrefix) {
			names = append(names, tl.Name)
		}
	}
	_, rest := send(t, http.MethodGet, s.base+"/workflows", token, "")
	var w struct {
		Workflows []struct {
			WorkflowID string `json:"workflowId"`
		} `json:"workflows"`
	}
	_ = json.Unmarshal([]byte(rest), &w)
	var ids []string
	for _, wf := range w.Workflows {
		ids = append(ids, wf.WorkflowID)
	}
	return strings.Join(names, ","), strings.Join(ids, ",")
}

// records parses the trail, one JSON object a line, without the time,
// which it checks.
func (s *permStack) records(t *testing.T) []map[string]string {
	t.Helper()
	var out []map[string]string
	sc := bufio.NewScanner(bytes.NewReader(s.trail.Bytes()))
	for sc.Scan() {
		var rec map[string]string
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if at, err := time.Parse(time.RFC3339Nano, rec["time"]); err != nil || time.Since(at) > 5*time.Minute {
			t.Errorf("audit time %q is not a recent RFC 3339 time", rec["time"])
		}
		delete(rec, "time")
		out = append(out, rec)
	}
	return out
}

// TestOAuthToolScopesOnTheWire: on the assembled server with tokens of a
// real OpenID provider, a token without the tool's scope does not see the
// tool in tools/list or GET /workflows, and its tools/call and POST /runs
// of it get 403 with the insufficient_scope challenge naming the scopes
// and the metadata, with no run started; a token with the scope sees and
// calls it.
func TestOAuthToolScopesOnTheWire(t *testing.T) {
	s := startPermStack(t)
	narrow := s.token(t, "alice-1", "acme", nil, "mcp")
	wide := s.token(t, "alice-1", "acme", nil, "mcp "+refundScope)
	if m, r := s.listed(t, narrow); m != gateTool || r != gateTool {
		t.Errorf("without the scope: tools/list %q, GET /workflows %q; want %s alone", m, r, gateTool)
	}
	if m, r := s.listed(t, wide); m != gateTool+","+scopedTool || r != m {
		t.Errorf("with the scope: tools/list %q, GET /workflows %q; want both tools", m, r)
	}

	challenge := `Bearer error="insufficient_scope", error_description="insufficient scope: the %s ` + scopedTool +
		` needs the scope mcp ` + refundScope + `", resource_metadata="` + s.base + `/.well-known/oauth-protected-resource/mcp", scope="mcp ` + refundScope + `"`
	resp, body := s.mcp(t, narrow, "tools/call", scopedTool, map[string]any{"name": scopedTool, "arguments": map[string]any{"orderId": "o-1"}})
	if want := fmt.Sprintf(challenge, "tool"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != want ||
		!bytes.Contains(body, []byte(refundScope)) {
		t.Errorf("tools/call without the scope: %d %q %s; want 403 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body, want)
	}
	rresp, rbody := send(t, http.MethodPost, s.base+"/runs", narrow, `{"workflowId":"`+scopedTool+`","inputs":{"orderId":"o-1"}}`)
	if want := fmt.Sprintf(challenge, "workflow"); rresp.StatusCode != http.StatusForbidden || rresp.Header.Get("WWW-Authenticate") != want ||
		!strings.Contains(rbody, `"forbidden"`) || !strings.Contains(rbody, refundScope) {
		t.Errorf("POST /runs without the scope: %d %q %s; want 403 %q", rresp.StatusCode, rresp.Header.Get("WWW-Authenticate"), rbody, want)
	}
	if _, list := send(t, http.MethodGet, s.base+"/runs", wide, ""); strings.Contains(list, scopedTool) {
		t.Fatalf("a refused call started a run: %s", list)
	}

	resp, body = s.mcp(t, wide, "tools/call", scopedTool, map[string]any{"name": scopedTool, "arguments": map[string]any{"orderId": "o-2"}})
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("refunded o-2")) {
		t.Errorf("tools/call with the scope: %d %s", resp.StatusCode, body)
	}
	if rresp, rbody := send(t, http.MethodPost, s.base+"/runs", wide, `{"workflowId":"`+scopedTool+`","inputs":{"orderId":"o-3"}}`); rresp.StatusCode != http.StatusCreated {
		t.Errorf("POST /runs with the scope: %d %s", rresp.StatusCode, rbody)
	}
}

// runStatus polls GET /runs/{id} until the run reaches status.
func (s *permStack) runStatus(t *testing.T, token, id string, status signals.Status) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, body := send(t, http.MethodGet, s.base+"/runs/"+runid.Project(id), token, "")
		var r struct{ Status signals.Status }
		if json.Unmarshal([]byte(body), &r) == nil && r.Status == status {
			return
		}
	}
	t.Fatalf("run %s never reached %s", id, status)
}

// TestOAuthSession runs a session of OAuth callers on the assembled server
// and checks what it leaves in the audit trail, field by field: an
// approval only the group finance may give (a token whose groups claim
// holds finance answers it, one of the same tenant whose claim does not
// is refused), a token of another tenant reading the task (exactly the
// bytes of a task that does not exist), a refused token (invalid_token)
// and tokens without a scope (insufficient_scope, for every request and
// for a tool). Every record names the provider's issuer and the token's
// subject; none holds a token.
func TestOAuthSession(t *testing.T) {
	s := startPermStack(t)
	alice := s.token(t, "alice-1", "acme", []string{"finance"}, "mcp")
	carol := s.token(t, "carol-1", "acme", []string{"sales"}, "mcp")
	bob := s.token(t, "bob-1", "globex", []string{"finance"}, "mcp")

	resp, body := send(t, http.MethodPost, s.base+"/runs", alice, `{"workflowId":"`+gateTool+`","inputs":{"orderId":"o-9"}}`)
	var created struct{ RunID string }
	if err := json.Unmarshal([]byte(body), &created); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /runs: %d %s", resp.StatusCode, body)
	}
	run := created.RunID
	s.runStatus(t, alice, run, signals.StatusWaitingApproval)
	answer := s.base + "/runs/" + runid.Project(run) + "/interrupts/gate"
	if resp, body := send(t, http.MethodPost, answer, carol, `{"resumeValue":{"action":"accept"}}`); resp.StatusCode != http.StatusForbidden ||
		!strings.Contains(body, "not an eligible approver") {
		t.Fatalf("an answer of a token outside the group: %d %s, want 403", resp.StatusCode, body)
	}

	// Tenant B reads tenant A's task: the bytes of one that does not exist.
	_, foreign := s.mcp(t, bob, "tasks/get", runid.Project(run), map[string]any{"taskId": runid.Project(run)})
	missing := "globex~2FAAAAAAAAAAAAAAAAAAAAAAAA"
	_, none := s.mcp(t, bob, "tasks/get", missing, map[string]any{"taskId": missing})
	if !bytes.Equal(foreign, none) || !bytes.Contains(none, []byte("task not found")) {
		t.Errorf("tenant B reading tenant A's task:\n%s\nwant the answer to a task that does not exist:\n%s", foreign, none)
	}

	if resp, body := send(t, http.MethodPost, answer, alice, `{"resumeValue":{"action":"accept"}}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("the answer of a token in the group: %d %s", resp.StatusCode, body)
	}
	s.runStatus(t, alice, run, signals.StatusCompleted)

	// Refusals on authorization grounds.
	expired := func() string {
		c := s.provider.Claims("alice-1", []string{s.base + auth.ResourcePath}, time.Minute)
		c["tenant"], c["scope"], c["exp"] = "acme", "mcp", time.Now().Add(-time.Hour).Unix()
		tok, _ := s.provider.Sign(c)
		return tok
	}()
	if resp, _ := send(t, http.MethodGet, s.base+"/runs", expired, ""); resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("an expired token: %d %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	unscoped := s.token(t, "alice-1", "acme", nil, "")
	if resp, _ := s.mcp(t, unscoped, "tools/list", "", map[string]any{}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a token without mcp: %d", resp.StatusCode)
	}
	if resp, _ := s.mcp(t, alice, "tools/call", scopedTool, map[string]any{"name": scopedTool, "arguments": map[string]any{}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a token without %s: %d", refundScope, resp.StatusCode)
	}

	who := func(sub, tenant string, fields ...string) map[string]string {
		m := map[string]string{"issuer": s.provider.Issuer, "subject": sub, "tenant": tenant}
		for i := 0; i+1 < len(fields); i += 2 {
			m[fields[i]] = fields[i+1]
		}
		return m
	}
	interrupt := run + "-i1"
	want := []map[string]string{
		who("alice-1", "acme", "action", "start", "outcome", "ok", "runId", run, "tool", gateTool, "transport", "rest"),
		who("carol-1", "acme", "action", "answer", "outcome", "refused", "reason", "not-eligible", "runId", run, "tool", gateTool,
			"interruptId", interrupt, "resolution", "accept"),
		who("bob-1", "globex", "action", "read", "outcome", "refused", "reason", "tenant-mismatch", "runId", run),
		who("alice-1", "acme", "action", "answer", "outcome", "ok", "runId", run, "tool", gateTool,
			"interruptId", interrupt, "resolution", "accept"),
		{"action": "authenticate", "outcome": "refused", "reason": "invalid-credential"},
		{"action": "authenticate", "outcome": "refused", "reason": "insufficient-scope", "scope": "mcp"},
		who("alice-1", "acme", "action", "start", "outcome", "refused", "reason", "insufficient-scope", "tool", scopedTool,
			"transport", "mcp", "scope", "mcp "+refundScope),
	}
	got := s.records(t)
	for i, rec := range got {
		if rec["action"] == "authenticate" {
			if !strings.HasPrefix(rec["remote"], "127.0.0.1:") {
				t.Errorf("record %d: remote %q, want the loopback client", i, rec["remote"])
			}
			delete(rec, "remote")
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit records:\n got %v\nwant %v", got, want)
	}
	for _, tok := range []string{alice, carol, bob, expired, unscoped} {
		if bytes.Contains(s.trail.Bytes(), []byte(tok)) || bytes.Contains(s.trail.Bytes(), []byte(strings.Split(tok, ".")[2])) {
			t.Errorf("the audit trail holds a token:\n%s", s.trail.Bytes())
		}
	}
}
