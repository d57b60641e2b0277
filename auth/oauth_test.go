package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/oidctest"
)

const resource = "https://wop.example.test/mcp"

// newProvider starts a provider whose tokens are for resource, with one
// user of tenant acme in the group finance.
func newProvider(t *testing.T) *oidctest.Provider {
	return oidctest.Start(t, oidctest.Options{
		Audience: []string{resource},
		Users: []oidctest.User{{Username: "alice", Password: "pw", Subject: "alice-1",
			Claims: map[string]any{"tenant": "acme", "groups": []string{"finance", "ops"}}}},
		RedirectURIs: []string{"http://localhost/callback"},
	})
}

// newOAuth returns a resource server for the issuers, ready.
func newOAuth(t *testing.T, opts auth.OAuthOptions) *auth.OAuth {
	t.Helper()
	opts.Resource = resource
	if opts.TenantClaim == "" {
		opts.TenantClaim = "tenant"
	}
	o, err := auth.NewOAuth(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	for _, is := range opts.Issuers {
		select {
		case <-o.Ready(is):
		case <-time.After(30 * time.Second):
			t.Fatalf("issuer %s not ready: %v", is, o.Unreachable())
		}
	}
	return o
}

// request is a request with the bearer token.
func request(token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

func TestOAuthAcceptsProviderToken(t *testing.T) {
	p := newProvider(t)
	o := newOAuth(t, auth.OAuthOptions{Issuers: []string{p.Issuer}, GroupsClaim: "groups"})
	claims := p.Claims("alice-1", []string{resource}, time.Minute)
	claims["tenant"], claims["groups"], claims["scope"] = "acme", []string{"finance"}, "tools:read refunds"
	tok, err := p.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	s, err := o.Authenticator(nil)(request(tok))
	if err != nil {
		t.Fatal(err)
	}
	if s.Issuer != p.Issuer || s.SubjectID != "alice-1" || s.Tenant != "acme" || s.Kind != auth.KindOAuth || !s.Scoped {
		t.Fatalf("subject %+v", s)
	}
	if strings.Join(s.Groups, ",") != "finance" || strings.Join(s.Scopes, ",") != "tools:read,refunds" {
		t.Fatalf("groups %v scopes %v", s.Groups, s.Scopes)
	}
}

// alg none and HS256 tokens are made by hand: no library signs them.
func unsignedToken(t *testing.T, alg string, claims map[string]any) string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	sig := ""
	if alg != "none" {
		sig = enc.EncodeToString([]byte("not-a-real-mac-but-long-enough-32b"))
	}
	return enc.EncodeToString(h) + "." + enc.EncodeToString(c) + "." + sig
}

func TestOAuthRefusesHostileTokens(t *testing.T) {
	p := newProvider(t)
	other := newProvider(t)
	o := newOAuth(t, auth.OAuthOptions{Issuers: []string{p.Issuer}})
	good := func() map[string]any {
		c := p.Claims("alice-1", []string{resource}, time.Minute)
		c["tenant"] = "acme"
		return c
	}
	sign := func(c map[string]any) string {
		tok, err := p.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	tests := []struct {
		name  string
		token func() string
		want  string // in the reason
	}{
		{"wrong audience", func() string { c := good(); c["aud"] = []string{"https://other.example/mcp"}; return sign(c) }, "aud"},
		{"expired", func() string { c := good(); c["exp"] = time.Now().Add(-time.Hour).Unix(); return sign(c) }, "expired"},
		{"not yet valid", func() string { c := good(); c["nbf"] = time.Now().Add(time.Hour).Unix(); return sign(c) }, "nbf"},
		{"another issuer", func() string {
			c := other.Claims("alice-1", []string{resource}, time.Minute)
			c["tenant"] = "acme"
			tok, err := other.Sign(c)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}, "not accepted"},
		{"issuer claimed, key of another", func() string {
			tok, err := other.Sign(good())
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}, "signature"},
		{"unpublished key", func() string {
			tok, err := p.SignUnpublished(good())
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}, "signature"},
		{"tampered signature", func() string {
			tok := sign(good())
			i := strings.LastIndexByte(tok, '.')
			sig := []byte(tok[i+1:])
			if sig[10] == 'A' {
				sig[10] = 'B'
			} else {
				sig[10] = 'A'
			}
			return tok[:i+1] + string(sig)
		}, "signature"},
		{"tampered claims", func() string {
			tok := sign(good())
			parts := strings.Split(tok, ".")
			c := good()
			c["tenant"] = "globex"
			b, _ := json.Marshal(c)
			parts[1] = base64.RawURLEncoding.EncodeToString(b)
			return strings.Join(parts, ".")
		}, "signature"},
		{"alg none", func() string { return unsignedToken(t, "none", good()) }, "algorithm"},
		{"alg HS256", func() string { return unsignedToken(t, "HS256", good()) }, "algorithm"},
		{"no tenant claim", func() string { c := good(); delete(c, "tenant"); return sign(c) }, "tenant"},
		{"tenant outside the grammar", func() string { c := good(); c["tenant"] = "acme/../globex"; return sign(c) }, "tenant"},
		{"development tenant", func() string { c := good(); c["tenant"] = "anon:local"; return sign(c) }, "tenant"},
		{"tenant not a string", func() string { c := good(); c["tenant"] = []string{"acme"}; return sign(c) }, "tenant"},
		{"no subject", func() string { c := good(); delete(c, "sub"); return sign(c) }, "subject"},
		{"not a JWT", func() string { return "opaque-token-value" }, "JWT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := tt.token()
			_, err := o.Authenticator(nil)(request(tok))
			var ref *auth.Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("err = %v, want a Refusal", err)
			}
			if ref.Status != http.StatusUnauthorized || ref.Code != auth.CodeInvalidToken {
				t.Fatalf("status %d code %q, want 401 invalid_token", ref.Status, ref.Code)
			}
			if !strings.Contains(ref.Reason, tt.want) {
				t.Errorf("reason %q does not name %q", ref.Reason, tt.want)
			}
			if strings.Contains(ref.Reason, tok) || strings.Contains(ref.Challenge(), tok) {
				t.Error("the refusal contains the token")
			}
			ch := ref.Challenge()
			for _, want := range []string{`error="invalid_token"`, `resource_metadata="https://wop.example.test/.well-known/oauth-protected-resource/mcp"`} {
				if !strings.Contains(ch, want) {
					t.Errorf("challenge %s lacks %s", ch, want)
				}
			}
		})
	}
}

func TestOAuthChallenges(t *testing.T) {
	p := newProvider(t)
	o := newOAuth(t, auth.OAuthOptions{Issuers: []string{p.Issuer}, RequiredScopes: []string{"mcp"}})
	_, err := o.Authenticator(nil)(request(""))
	want := `Bearer resource_metadata="https://wop.example.test/.well-known/oauth-protected-resource/mcp", scope="mcp"`
	if ref := (*auth.Refusal)(nil); !errors.As(err, &ref) || ref.Status != 401 || ref.Challenge() != want {
		t.Fatalf("no token: %v, challenge %q; want %q", err, challengeOf(err), want)
	}
	c := p.Claims("alice-1", []string{resource}, time.Minute)
	c["tenant"], c["scope"] = "acme", "other"
	tok, _ := p.Sign(c)
	_, err = o.Authenticator(nil)(request(tok))
	want = `Bearer error="insufficient_scope", error_description="insufficient scope: this request needs the scope mcp", ` +
		`resource_metadata="https://wop.example.test/.well-known/oauth-protected-resource/mcp", scope="mcp"`
	if auth.Status(err) != http.StatusForbidden || challengeOf(err) != want {
		t.Fatalf("missing scope: status %d challenge %q; want 403 %q", auth.Status(err), challengeOf(err), want)
	}
	c["scope"] = "other mcp"
	tok, _ = p.Sign(c)
	if _, err := o.Authenticator(nil)(request(tok)); err != nil {
		t.Fatalf("token with the scope: %v", err)
	}
}

func challengeOf(err error) string {
	w := httptest.NewRecorder()
	auth.Challenge(w, err)
	return w.Header().Get("WWW-Authenticate")
}

func TestOAuthKeysBeside(t *testing.T) {
	p := newProvider(t)
	o := newOAuth(t, auth.OAuthOptions{Issuers: []string{p.Issuer}})
	keys, err := auth.New([]auth.Key{{Key: "key-of-bob", Tenant: "globex", Subject: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := o.Authenticator(keys)(request("key-of-bob"))
	if err != nil || s.Tenant != "globex" || s.Kind != "api-key" || s.Scoped {
		t.Fatalf("API key: %+v, %v", s, err)
	}
	if _, err := o.Authenticator(keys)(request("key-of-nobody")); auth.Status(err) != 401 {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestOAuthRotatedKeyAcceptedWithoutRestart(t *testing.T) {
	p := newProvider(t)
	o := newOAuth(t, auth.OAuthOptions{Issuers: []string{p.Issuer}, KeyRefresh: -1})
	c := p.Claims("alice-1", []string{resource}, time.Minute)
	c["tenant"] = "acme"
	before, _ := p.Sign(c)
	if _, err := o.Verify(context.Background(), before); err != nil {
		t.Fatal(err)
	}
	if err := p.RotateKey(); err != nil {
		t.Fatal(err)
	}
	after, _ := p.Sign(c)
	if _, err := o.Verify(context.Background(), after); err != nil {
		t.Fatalf("token of the new key: %v", err)
	}
	if _, err := o.Verify(context.Background(), before); err != nil {
		t.Fatalf("token of the old key, still published: %v", err)
	}
}

// TestOAuthKeyFetchesRateLimited: tokens naming keys the issuer never
// published cost it at most one JWKS fetch per KeyRefresh.
func TestOAuthKeyFetchesRateLimited(t *testing.T) {
	p := newProvider(t)
	var fetches atomic.Int32
	client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/keys") {
			fetches.Add(1)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	o := newOAuth(t, auth.OAuthOptions{Issuers: []string{p.Issuer}, HTTPClient: client, KeyRefresh: time.Hour})
	c := p.Claims("alice-1", []string{resource}, time.Minute)
	c["tenant"] = "acme"
	good, _ := p.Sign(c)
	if _, err := o.Verify(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		bad, _ := p.SignUnpublished(c)
		if _, err := o.Verify(context.Background(), bad); err == nil {
			t.Fatal("unpublished key accepted")
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches, want 1", n)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestOAuthIssuerUnreachableAtStart: an issuer not reachable at start is
// reported, its tokens refused, and it is retried until it answers.
func TestOAuthIssuerUnreachableAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	_ = ln.Close() // nothing listens there yet
	o, err := auth.NewOAuth(auth.OAuthOptions{Issuers: []string{issuer}, Resource: resource, TenantClaim: "tenant",
		DiscoveryRetry: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if down := o.Unreachable(); down[issuer] == "" {
		t.Fatalf("Unreachable = %v, want %s", down, issuer)
	}
	ln, err = net.Listen("tcp", ln.Addr().String())
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	p := oidctest.Start(t, oidctest.Options{Audience: []string{resource}, Listener: ln})
	c := p.Claims("alice-1", []string{resource}, time.Minute)
	c["tenant"] = "acme"
	tok, _ := p.Sign(c)
	select {
	case <-o.Ready(issuer):
	case <-time.After(30 * time.Second):
		t.Fatalf("not ready: %v", o.Unreachable())
	}
	if _, err := o.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	if down := o.Unreachable(); len(down) != 0 {
		t.Fatalf("Unreachable = %v after discovery", down)
	}
}
