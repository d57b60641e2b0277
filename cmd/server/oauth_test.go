package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/oidctest"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
)

// oauthServer is the assembled server as an OAuth resource server.
type oauthServer struct {
	base  string // its public URL
	oauth *auth.OAuth
}

// freeAddr returns a loopback host:port nothing listens on, so that the
// public URL (the OAuth resource) is known before the server starts.
func freeAddr(t *testing.T) string {
	return fmt.Sprintf("127.0.0.1:%d", testsupport.MustFreePort(t))
}

// startOAuthServer runs the server's assembly (example tools, in-process
// worker, embedded Temporal) with OAuth configured as opts says (the
// resource and the tenant claim are set here) and keys beside it.
func startOAuthServer(t *testing.T, addr string, opts auth.OAuthOptions, keys *auth.Keys) *oauthServer {
	t.Helper()
	env := testenv.Temporal(t)
	base := "http://" + addr
	opts.Resource = base + auth.ResourcePath
	if opts.TenantClaim == "" {
		opts.TenantClaim = "tenant"
	}
	o, err := auth.NewOAuth(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	logger := testenv.Logger()
	reg, err := conformancetools.Registry(tools.NewActivities(logger, tools.ActivityOptions{OutputDir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := app.NewServer(app.ServerOptions{Registry: reg, Authenticate: o.Authenticator(keys), OAuth: o,
		PublicURL: base, Worker: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{HTTPAddr: addr, TaskQueue: testenv.UniqueTaskQueue(t), Worker: true, Remote: true,
		Client: client.Options{HostPort: env.Address, Namespace: env.Namespace}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.Start(ctx, cfg, logger, srv.Parts())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	return &oauthServer{base: base, oauth: o}
}

// oauthUsers are the provider's accounts: alice of tenant acme (group
// finance), bob of tenant globex.
var oauthUsers = []oidctest.User{
	{Username: "alice", Password: "alice-pw", Subject: "alice-1", Claims: map[string]any{"tenant": "acme", "groups": []string{"finance"}}},
	{Username: "bob", Password: "bob-pw", Subject: "bob-1", Claims: map[string]any{"tenant": "globex"}},
}

// tokenFor is a token of the provider for the server, as the provider
// issues them.
func tokenFor(t *testing.T, p *oidctest.Provider, s *oauthServer, sub, tenant, scope string) string {
	t.Helper()
	c := p.Claims(sub, []string{s.base + auth.ResourcePath}, 5*time.Minute)
	c["tenant"], c["scope"] = tenant, scope
	tok, err := p.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// send sends a request with the bearer token ("" for none).
func send(t *testing.T, method, url, token, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if strings.HasSuffix(url, "/mcp") {
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/list")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const listTools = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{}}}}`

// TestOAuthResourceServer: the assembled server serves its RFC 9728
// metadata at both forms of the well-known URL, answers MCP and REST
// requests without a token, or with a refused one, 401 with the challenge
// that names the metadata (invalid_token when a token was presented), one
// without the required scope 403 insufficient_scope, and lets a valid
// token and an API key through.
func TestOAuthResourceServer(t *testing.T) {
	addr := freeAddr(t)
	p := oidctest.Start(t, oidctest.Options{Audience: []string{"http://" + addr + auth.ResourcePath}, Users: oauthUsers})
	keys, err := auth.New([]auth.Key{{Key: "ops-key", Tenant: "acme", Subject: "ops"}})
	if err != nil {
		t.Fatal(err)
	}
	s := startOAuthServer(t, addr, auth.OAuthOptions{Issuers: []string{p.Issuer}, RequiredScopes: []string{"mcp"}}, keys)
	<-s.oauth.Ready(p.Issuer)

	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, body := send(t, http.MethodGet, s.base+path, "", "")
		var meta map[string]any
		if err := json.Unmarshal([]byte(body), &meta); resp.StatusCode != 200 || err != nil {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		if meta["resource"] != s.base+"/mcp" || !jsonHas(meta["authorization_servers"], p.Issuer) ||
			!jsonHas(meta["scopes_supported"], "mcp") || !jsonHas(meta["bearer_methods_supported"], "header") {
			t.Errorf("GET %s: %s", path, body)
		}
	}

	metaURL := s.base + "/.well-known/oauth-protected-resource/mcp"
	noToken := `Bearer resource_metadata="` + metaURL + `", scope="mcp"`
	good := tokenFor(t, p, s, "alice-1", "acme", "mcp")
	wrongAud := func() string {
		c := p.Claims("alice-1", []string{"http://elsewhere.example/mcp"}, time.Minute)
		c["tenant"], c["scope"] = "acme", "mcp"
		tok, _ := p.Sign(c)
		return tok
	}()
	tests := []struct {
		name, token   string
		status        int
		challenge     string // exact, or a prefix when it ends in "*"
		wantInMessage string
	}{
		{"no token", "", 401, noToken, "Bearer access token is required"},
		{"wrong audience", wrongAud, 401, `Bearer error="invalid_token", error_description="invalid token: it was not issued for this resource (aud)*`, "aud"},
		{"unknown API key", "not-a-key", 401, `Bearer error="invalid_token"*`, "JWT"},
		{"missing scope", tokenFor(t, p, s, "alice-1", "acme", "other"), 403,
			`Bearer error="insufficient_scope", error_description="insufficient scope: this request needs the scope mcp", resource_metadata="` + metaURL + `", scope="mcp"`, "mcp"},
		{"valid token", good, 200, "", ""},
		{"API key", "ops-key", 200, "", ""},
	}
	for _, tt := range tests {
		for _, route := range []struct{ method, path, body string }{
			{http.MethodPost, "/mcp", listTools},
			{http.MethodGet, "/runs", ""},
		} {
			t.Run(tt.name+route.path, func(t *testing.T) {
				resp, body := send(t, route.method, s.base+route.path, tt.token, route.body)
				if resp.StatusCode != tt.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
				}
				got := resp.Header.Get("WWW-Authenticate")
				if tt.status == 200 {
					return
				}
				if want, prefix := strings.CutSuffix(tt.challenge, "*"); (prefix && !strings.HasPrefix(got, want)) || (!prefix && got != want) {
					t.Errorf("WWW-Authenticate %q, want %q", got, tt.challenge)
				}
				if !strings.Contains(body, tt.wantInMessage) || (tt.token != "" && strings.Contains(body, tt.token)) {
					t.Errorf("body %s: want it to name %q and not contain the token", body, tt.wantInMessage)
				}
			})
		}
	}
}

func jsonHas(v any, want string) bool {
	list, _ := v.([]any)
	for _, x := range list {
		if x == want {
			return true
		}
	}
	return false
}

// TestOAuthIssuerUnreachableHealth: an issuer that cannot be reached at
// start is reported by /healthz (degraded, naming it) and its tokens are
// refused; once it answers, it is ready without a restart.
func TestOAuthIssuerUnreachableHealth(t *testing.T) {
	addr := freeAddr(t)
	issuerAddr := freeAddr(t)
	issuer := "http://" + issuerAddr
	s := startOAuthServer(t, addr, auth.OAuthOptions{Issuers: []string{issuer}, DiscoveryRetry: 200 * time.Millisecond}, nil)
	resp, body := send(t, http.MethodGet, s.base+"/healthz", "", "")
	var h app.Health
	if err := json.Unmarshal([]byte(body), &h); err != nil || resp.StatusCode != 200 || h.Status != "degraded" ||
		h.Issuers == nil || h.Issuers.Unreachable[issuer] == "" {
		t.Fatalf("/healthz: %d %s", resp.StatusCode, body)
	}
	// A token naming the issuer (signed by some other provider) is refused
	// while its keys are unknown.
	stranger := oidctest.Start(t, oidctest.Options{})
	c := stranger.Claims("alice-1", []string{s.base + auth.ResourcePath}, time.Minute)
	c["iss"], c["tenant"] = issuer, "acme"
	early, _ := stranger.Sign(c)
	if resp, body := send(t, http.MethodPost, s.base+"/mcp", early, listTools); resp.StatusCode != 401 ||
		!strings.Contains(body, "could not be fetched yet") {
		t.Fatalf("a token of the unreachable issuer: %d %s", resp.StatusCode, body)
	}
	ln, err := net.Listen("tcp", issuerAddr)
	if err != nil {
		t.Fatalf("the issuer's port: %v", err)
	}
	p := oidctest.Start(t, oidctest.Options{Audience: []string{s.base + auth.ResourcePath}, Users: oauthUsers, Listener: ln})
	tok := tokenFor(t, p, s, "alice-1", "acme", "")
	select {
	case <-s.oauth.Ready(issuer):
	case <-time.After(30 * time.Second):
		t.Fatalf("issuer not ready: %v", s.oauth.Unreachable())
	}
	if resp, body := send(t, http.MethodPost, s.base+"/mcp", tok, listTools); resp.StatusCode != 200 {
		t.Fatalf("tools/list once the issuer answers: %d %s", resp.StatusCode, body)
	}
	if resp, body := send(t, http.MethodGet, s.base+"/healthz", "", ""); !strings.Contains(body, `"status":"ok"`) {
		t.Fatalf("/healthz once the issuer answers: %d %s", resp.StatusCode, body)
	}
}
