package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/oidctest"
)

// loginRedirect is the redirect URI of the test host: nothing listens
// there, the login stops at the redirect to it (oidctest.Provider.Login).
const loginRedirect = "http://127.0.0.1/oauth/callback"

// wireStep is one HTTP exchange of a client: method, URL without query,
// status, and the body of a registration response.
type wireStep struct {
	method, url string
	status      int
	challenge   string // WWW-Authenticate
	body        []byte // only for POST /register
}

// wireLog records every HTTP exchange a client makes through it.
type wireLog struct {
	mu    sync.Mutex
	steps []wireStep
}

func (l *wireLog) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	u := *req.URL
	u.RawQuery = ""
	s := wireStep{method: req.Method, url: u.String(), status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate")}
	if strings.HasSuffix(u.Path, "/register") {
		s.body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(s.body))
	}
	l.mu.Lock()
	l.steps = append(l.steps, s)
	l.mu.Unlock()
	return resp, nil
}

// find returns the index of the first step at or after from that matches
// method and url, or -1.
func (l *wireLog) find(from int, method, url string) (int, wireStep) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := max(from, 0); i < len(l.steps); i++ {
		if s := l.steps[i]; s.method == method && s.url == url {
			return i, s
		}
	}
	return -1, wireStep{}
}

func (l *wireLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, s := range l.steps {
		fmt.Fprintf(&b, "\n  %s %s -> %d", s.method, s.url, s.status)
	}
	return b.String()
}

// host is an MCP host that logs alice in with the go-sdk's
// AuthorizationCodeHandler: every authorization URL it was sent to, and
// the HTTP exchanges of its discovery, registration and token requests and
// of its MCP transport.
type host struct {
	handler *sdkauth.AuthorizationCodeHandler
	wire    *wireLog
	mu      sync.Mutex
	visited []*url.URL
}

func newHost(t *testing.T, p *oidctest.Provider, cfg sdkauth.AuthorizationCodeHandlerConfig) *host {
	t.Helper()
	h := &host{wire: &wireLog{}}
	cfg.Client = &http.Client{Transport: h.wire, Timeout: 30 * time.Second}
	cfg.AuthorizationCodeFetcher = func(ctx context.Context, args *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
		u, err := url.Parse(args.URL)
		if err != nil {
			return nil, err
		}
		h.mu.Lock()
		h.visited = append(h.visited, u)
		h.mu.Unlock()
		back, err := p.Login(ctx, args.URL, "alice", "alice-pw")
		if err != nil {
			return nil, err
		}
		q := back.Query()
		return &sdkauth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
	handler, err := sdkauth.NewAuthorizationCodeHandler(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.handler = handler
	return h
}

// connect opens a 2026-07-28 go-sdk client session through the host's
// handler; the elicitation handler accepts every question.
func (h *host) connect(ctx context.Context, t *testing.T, endpoint string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "oauth-login-test", Version: "0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"action": "accept"}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, OAuthHandler: h.handler,
		HTTPClient: &http.Client{Transport: h.wire}}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect through the OAuth login: %v\nwire:%s", err, h.wire)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// token is the access token the handler obtained.
func (h *host) token(t *testing.T) oauth2.TokenSource {
	t.Helper()
	ts, err := h.handler.TokenSource(context.Background())
	if err != nil || ts == nil {
		t.Fatalf("no token source after the login: %v", err)
	}
	return ts
}

// jwtClaims decodes a JWT's claims (the server verified its signature).
func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("the access token is not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c map[string]any
	if err != nil || json.Unmarshal(raw, &c) != nil {
		t.Fatalf("the access token's claims do not decode: %v", err)
	}
	return c
}

// TestOAuthLoginGoSDK: the whole login of the go-sdk client on the wire.
// Its StreamableClientTransport, with an AuthorizationCodeHandler, sends
// its first request without a token and gets 401; the handler reads the
// RFC 9728 metadata the challenge names and the provider's metadata,
// registers a client (RFC 7591), runs the authorization code flow with
// PKCE and the resource indicator (alice logs in on the provider's page)
// and exchanges the code; the request is retried with the token. The
// token is a JWT for the MCP resource with alice's tenant, groups and the
// required scope. The client then lists tools and calls publish_report
// (its question answered by the client's elicitation handler), and, with
// the same token through oauth2.Transport since the go-sdk client has no
// Tasks API, runs publish_report as a task, answers its question with
// tasks/update, and cancels a slow_compute task with tasks/cancel. A host
// with the pre-registered client logs in too.
func TestOAuthLoginGoSDK(t *testing.T) {
	addr := freeAddr(t)
	resource := "http://" + addr + auth.ResourcePath
	p := oidctest.Start(t, oidctest.Options{Audience: []string{resource}, Users: oauthUsers, RedirectURIs: []string{loginRedirect}})
	s := startOAuthServer(t, addr, auth.OAuthOptions{Issuers: []string{p.Issuer}, RequiredScopes: []string{"mcp"}, GroupsClaim: "groups"}, nil)
	select {
	case <-s.oauth.Ready(p.Issuer):
	case <-time.After(time.Minute):
		t.Fatalf("issuer not ready: %v", s.oauth.Unreachable())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	h := newHost(t, p, sdkauth.AuthorizationCodeHandlerConfig{DynamicClientRegistrationConfig: &sdkauth.DynamicClientRegistrationConfig{
		Metadata: &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{loginRedirect}, TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"}, ClientName: "oauth-login-test"}}})
	cs := h.connect(ctx, t, resource)
	clientID := checkLoginWire(t, h, s, p, resource)
	checkLoginURL(t, h, clientID, resource)

	claims := jwtClaims(t, mustToken(t, h.token(t)))
	if aud, _ := json.Marshal(claims["aud"]); claims["iss"] != p.Issuer || claims["sub"] != "alice-1" || claims["tenant"] != "acme" ||
		claims["scope"] != "mcp" || claims["client_id"] != clientID || (string(aud) != `"`+resource+`"` && string(aud) != `["`+resource+`"]`) {
		t.Fatalf("access token claims %v", claims)
	}
	if g, _ := json.Marshal(claims["groups"]); string(g) != `["finance"]` {
		t.Fatalf("access token groups %s", g)
	}

	t.Run("tools through the SDK", func(t *testing.T) {
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Contains(names, "publish_report") || !slices.Contains(names, "slow_compute") {
			t.Fatalf("tools/list: %v", names)
		}
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "publish_report", Arguments: map[string]any{"title": "Login", "topic": "go-sdk"}})
		if err != nil || r.IsError || !strings.Contains(toolText(r), "published at") {
			t.Fatalf("tools/call publish_report: %v %+v", err, r)
		}
	})
	t.Run("tasks with the token", func(t *testing.T) {
		hc := &http.Client{Transport: &oauth2.Transport{Source: h.token(t)}, Timeout: 30 * time.Second}
		answerTask(ctx, t, hc, resource)
		cancelTask(ctx, t, hc, resource)
	})
	// One login served every request of the session and the token's.
	checkLoginURL(t, h, clientID, resource)

	t.Run("pre-registered client", func(t *testing.T) {
		pre := newHost(t, p, sdkauth.AuthorizationCodeHandlerConfig{RedirectURL: loginRedirect,
			PreregisteredClient: &oauthex.ClientCredentials{ClientID: p.ClientID, Issuer: p.Issuer}})
		cs := pre.connect(ctx, t, resource)
		if i, _ := pre.wire.find(0, http.MethodPost, p.Issuer+"/register"); i >= 0 {
			t.Errorf("the host with a pre-registered client registered one:%s", pre.wire)
		}
		checkLoginURL(t, pre, p.ClientID, resource)
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list: %v", err)
		}
	})
}

func mustToken(t *testing.T, ts oauth2.TokenSource) string {
	t.Helper()
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

func toolText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// checkLoginWire checks the order of the login's HTTP exchanges and
// returns the registered client id.
func checkLoginWire(t *testing.T, h *host, s *oauthServer, p *oidctest.Provider, resource string) string {
	t.Helper()
	metaURL := s.base + "/.well-known/oauth-protected-resource/mcp"
	i, first := h.wire.find(0, http.MethodPost, resource)
	if i < 0 || first.status != http.StatusUnauthorized || !strings.Contains(first.challenge, `resource_metadata="`+metaURL+`"`) ||
		!strings.Contains(first.challenge, `scope="mcp"`) {
		t.Fatalf("the first MCP request: %+v, want 401 naming the metadata\nwire:%s", first, h.wire)
	}
	var reg oidctest.Registration
	at := i
	for _, want := range []struct {
		method, url string
		status      int
	}{
		{http.MethodGet, metaURL, 200},
		{http.MethodGet, p.Issuer + "/.well-known/openid-configuration", 200},
		{http.MethodPost, p.Issuer + "/register", 201},
		{http.MethodPost, p.Issuer + "/oauth/token", 200},
		{http.MethodPost, resource, 200},
	} {
		j, step := h.wire.find(at+1, want.method, want.url)
		if j < 0 || step.status != want.status {
			t.Fatalf("after step %d, %s %s -> %d was not next (got %+v)\nwire:%s", at, want.method, want.url, want.status, step, h.wire)
		}
		if want.status == 201 && json.Unmarshal(step.body, &reg) != nil {
			t.Fatalf("registration response %s", step.body)
		}
		at = j
	}
	if reg.ClientID == "" || reg.TokenEndpointAuthMethod != "none" {
		t.Fatalf("registration %+v", reg)
	}
	return reg.ClientID
}

// checkLoginURL checks the one authorization URL the host was sent to:
// the client, the code flow, S256 PKCE, the resource and the scope.
func checkLoginURL(t *testing.T, h *host, clientID, resource string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.visited) != 1 {
		t.Fatalf("authorization URLs %v, want one", h.visited)
	}
	q := h.visited[0].Query()
	for k, want := range map[string]string{"client_id": clientID, "response_type": "code", "code_challenge_method": "S256",
		"resource": resource, "scope": "mcp", "redirect_uri": loginRedirect} {
		if q.Get(k) != want {
			t.Errorf("authorization URL %s = %q, want %q", k, q.Get(k), want)
		}
	}
	if len(q.Get("code_challenge")) < 43 || q.Get("state") == "" {
		t.Errorf("authorization URL without a PKCE challenge or state: %s", h.visited[0])
	}
}

// oauthRPC posts one 2026-07-28 request (declaring the Tasks extension)
// with the client hc, whose transport adds the bearer token.
func oauthRPC(ctx context.Context, t *testing.T, hc *http.Client, endpoint, method, name string, params map[string]any) rpcResponse {
	t.Helper()
	params["_meta"] = mcpMeta
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if i := bytes.Index(raw, []byte("data: ")); i >= 0 {
		raw = raw[i+len("data: "):]
	}
	var r rpcResponse
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&r); err != nil {
		t.Fatalf("%s: %d %s: %v", method, resp.StatusCode, raw, err)
	}
	if r.Error != nil {
		t.Fatalf("%s: %d %s", method, r.Error.Code, r.Error.Message)
	}
	return r
}

// loginTask is the part of a task the login test reads.
type loginTask struct {
	ResultType    string `json:"resultType"`
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	InputRequests map[string]struct {
		Method string `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	} `json:"inputRequests"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

func decodeTask(t *testing.T, r rpcResponse) loginTask {
	t.Helper()
	var tk loginTask
	if err := json.Unmarshal(r.Result, &tk); err != nil {
		t.Fatalf("task %s: %v", r.Result, err)
	}
	return tk
}

// startTask calls a tool as a task and returns its id.
func startTask(ctx context.Context, t *testing.T, hc *http.Client, endpoint, tool string, args map[string]any) string {
	t.Helper()
	tk := decodeTask(t, oauthRPC(ctx, t, hc, endpoint, "tools/call", tool, map[string]any{"name": tool, "arguments": args}))
	if tk.ResultType != "task" || tk.TaskID == "" {
		t.Fatalf("tools/call %s: %+v, want a task", tool, tk)
	}
	return tk.TaskID
}

// awaitTask polls tasks/get until the task has the status.
func awaitTask(ctx context.Context, t *testing.T, hc *http.Client, endpoint, id, status string) loginTask {
	t.Helper()
	for {
		tk := decodeTask(t, oauthRPC(ctx, t, hc, endpoint, "tasks/get", id, map[string]any{"taskId": id}))
		if tk.Status == status {
			return tk
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s is %s, never %s", id, tk.Status, status)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// answerTask runs publish_report as a task, approves it with tasks/update
// and reads the published result.
func answerTask(ctx context.Context, t *testing.T, hc *http.Client, endpoint string) {
	t.Helper()
	id := startTask(ctx, t, hc, endpoint, "publish_report", map[string]any{"title": "Login", "topic": "tasks"})
	waiting := awaitTask(ctx, t, hc, endpoint, id, "input_required")
	if len(waiting.InputRequests) != 1 {
		t.Fatalf("input requests %+v, want the approval", waiting.InputRequests)
	}
	for key, q := range waiting.InputRequests {
		if q.Method != "elicitation/create" || !strings.Contains(q.Params.Message, "Login") {
			t.Fatalf("input request %+v, want the approval of the report", q)
		}
		oauthRPC(ctx, t, hc, endpoint, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}}}})
	}
	done := awaitTask(ctx, t, hc, endpoint, id, "completed")
	if done.Result == nil || done.Result.IsError || len(done.Result.Content) == 0 || !strings.Contains(done.Result.Content[0].Text, "published at") {
		t.Fatalf("completed task %+v, want the report published", done.Result)
	}
}

// cancelTask runs slow_compute as a task and cancels it with tasks/cancel.
func cancelTask(ctx context.Context, t *testing.T, hc *http.Client, endpoint string) {
	t.Helper()
	id := startTask(ctx, t, hc, endpoint, "slow_compute", map[string]any{"seconds": 120, "label": "login"})
	oauthRPC(ctx, t, hc, endpoint, "tasks/cancel", id, map[string]any{"taskId": id})
	awaitTask(ctx, t, hc, endpoint, id, "cancelled")
}
