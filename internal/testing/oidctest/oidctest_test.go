package oidctest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/openwop/temporal-mcp/internal/testing/oidctest"
)

const (
	resource = "https://wop.example.test/mcp"
	other    = "https://other.example.test/mcp"
	redirect = "http://127.0.0.1/callback"
)

// metadata is the part of the discovery document a client reads.
type metadata struct {
	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	RegistrationEndpoint  string   `json:"registration_endpoint"`
	JWKSURI               string   `json:"jwks_uri"`
	CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
}

func start(t *testing.T) (*oidctest.Provider, metadata) {
	t.Helper()
	p := oidctest.Start(t, oidctest.Options{Audience: []string{resource, other}, RedirectURIs: []string{redirect},
		Users: []oidctest.User{{Username: "alice", Password: "pw", Subject: "alice-1",
			Claims: map[string]any{"tenant": "acme", "groups": []string{"finance"}}}}})
	var m metadata
	if code, body := do(t, http.MethodGet, p.Issuer+"/.well-known/openid-configuration", ""); code != 200 || json.Unmarshal([]byte(body), &m) != nil {
		t.Fatalf("discovery: %d %s", code, body)
	}
	return p, m
}

// do sends a request (a JSON body when body is not "") and returns the
// status and body.
func do(t *testing.T, method, u, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// registerClient registers a public client and returns its id.
func registerClient(t *testing.T, m metadata) string {
	t.Helper()
	code, body := do(t, http.MethodPost, m.RegistrationEndpoint,
		`{"redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"client_name":"test"}`)
	var reg oidctest.Registration
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &reg) != nil || reg.ClientID == "" ||
		reg.TokenEndpointAuthMethod != "none" || !slices.Equal(reg.RedirectURIs, []string{redirect}) {
		t.Fatalf("register: %d %s", code, body)
	}
	return reg.ClientID
}

func config(m metadata, clientID string) *oauth2.Config {
	return &oauth2.Config{ClientID: clientID, RedirectURL: redirect, Scopes: []string{"mcp"},
		Endpoint: oauth2.Endpoint{AuthURL: m.AuthorizationEndpoint, TokenURL: m.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}
}

// TestAuthorizationCodeFlow: a client found by discovery registers
// (RFC 7591), or is the pre-registered one, and logs alice in with the
// authorization code flow, PKCE and a resource indicator; the access token
// is a JWT signed with a published key, for that resource alone, with
// alice's claims and the granted scope.
func TestAuthorizationCodeFlow(t *testing.T) {
	p, m := start(t)
	if m.Issuer != p.Issuer || m.RegistrationEndpoint != p.Issuer+"/register" || !slices.Contains(m.CodeChallengeMethods, "S256") {
		t.Fatalf("discovery: %+v", m)
	}
	for _, tc := range []struct{ name, clientID, resource string }{
		{"registered", registerClient(t, m), resource},
		{"pre-registered", p.ClientID, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cfg := config(m, tc.clientID)
			verifier := oauth2.GenerateVerifier()
			authURL := cfg.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", tc.resource))
			back, err := p.Login(ctx, authURL, "alice", "pw")
			if err != nil {
				t.Fatal(err)
			}
			if back.Query().Get("state") != "state-1" || !strings.HasPrefix(back.String(), redirect+"?") {
				t.Fatalf("redirect %s", back)
			}
			tok, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", tc.resource))
			if err != nil {
				t.Fatal(err)
			}
			claims := verify(t, m, tok.AccessToken)
			aud, _ := json.Marshal(claims["aud"])
			if claims["iss"] != p.Issuer || claims["sub"] != "alice-1" || claims["tenant"] != "acme" || claims["scope"] != "mcp" ||
				(string(aud) != `"`+tc.resource+`"` && string(aud) != `["`+tc.resource+`"]`) || claims["client_id"] != tc.clientID {
				t.Fatalf("access token claims %v (aud %s)", claims, aud)
			}
			if g, _ := json.Marshal(claims["groups"]); string(g) != `["finance"]` {
				t.Fatalf("groups %s", g)
			}
		})
	}
}

// verify checks the token's signature against the provider's JWKS and
// returns its claims.
func verify(t *testing.T, m metadata, token string) map[string]any {
	t.Helper()
	var keys jose.JSONWebKeySet
	if code, body := do(t, http.MethodGet, m.JWKSURI, ""); code != 200 || json.Unmarshal([]byte(body), &keys) != nil {
		t.Fatalf("jwks: %d %s", code, body)
	}
	jws, err := jose.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatalf("the access token is not a JWS: %v", err)
	}
	published := keys.Key(jws.Signatures[0].Header.KeyID)
	if len(published) != 1 {
		t.Fatalf("the token's key %q is not published", jws.Signatures[0].Header.KeyID)
	}
	payload, err := jws.Verify(published[0])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

// TestAuthorizationRefusals: an authorization request without PKCE or
// without a known resource, a token request for another resource than the
// code's or with the wrong verifier, and a wrong password are refused, each
// with the error that says why.
func TestAuthorizationRefusals(t *testing.T) {
	p, m := start(t)
	cfg := config(m, registerClient(t, m))
	verifier := oauth2.GenerateVerifier()
	pkce := oauth2.S256ChallengeOption(verifier)
	for _, tc := range []struct {
		name string
		opts []oauth2.AuthCodeOption
		want string
	}{
		{"no resource", []oauth2.AuthCodeOption{pkce}, `"invalid_target"`},
		{"unknown resource", []oauth2.AuthCodeOption{pkce, oauth2.SetAuthURLParam("resource", "https://elsewhere.test/mcp")}, `unknown resource \"https://elsewhere.test/mcp\"`},
		{"no PKCE", []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("resource", resource)}, "PKCE is required"},
		{"plain PKCE", []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("resource", resource),
			oauth2.SetAuthURLParam("code_challenge", verifier), oauth2.SetAuthURLParam("code_challenge_method", "plain")}, "PKCE is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := do(t, http.MethodGet, cfg.AuthCodeURL("s", tc.opts...), ""); code != 400 || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s, want 400 naming %s", code, body, tc.want)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	authURL := cfg.AuthCodeURL("s", pkce, oauth2.SetAuthURLParam("resource", resource))
	if _, err := p.Login(ctx, authURL, "alice", "wrong"); err == nil || !strings.Contains(err.Error(), "did not redirect") {
		t.Fatalf("a wrong password: %v", err)
	}
	for _, tc := range []struct {
		name     string
		verifier string
		resource string
		want     string
	}{
		{"another resource", verifier, other, "was issued for resource"},
		{"wrong verifier", oauth2.GenerateVerifier(), resource, "invalid_grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			back, err := p.Login(ctx, authURL, "alice", "pw")
			if err != nil {
				t.Fatal(err)
			}
			_, err = cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(tc.verifier), oauth2.SetAuthURLParam("resource", tc.resource))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("exchange: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// TestRegistrationRefusals: a registration the provider does not offer is
// refused with the RFC 7591 error code and a description naming the field.
func TestRegistrationRefusals(t *testing.T) {
	_, m := start(t)
	for _, tc := range []struct{ name, body, code, field string }{
		{"not JSON", `redirect_uris=x`, "invalid_client_metadata", "JSON"},
		{"no redirect URI", `{"client_name":"x"}`, "invalid_redirect_uri", "redirect_uris"},
		{"relative redirect URI", `{"redirect_uris":["/cb"]}`, "invalid_redirect_uri", "absolute"},
		{"http off loopback", `{"redirect_uris":["http://example.test/cb"]}`, "invalid_redirect_uri", "loopback"},
		{"javascript", `{"redirect_uris":["javascript:alert(1)"]}`, "invalid_redirect_uri", "javascript"},
		{"confidential client", `{"redirect_uris":["` + redirect + `"],"token_endpoint_auth_method":"client_secret_basic"}`, "invalid_client_metadata", "token_endpoint_auth_method"},
		{"client credentials", `{"redirect_uris":["` + redirect + `"],"grant_types":["client_credentials"]}`, "invalid_client_metadata", "grant_types"},
		{"implicit", `{"redirect_uris":["` + redirect + `"],"response_types":["token"]}`, "invalid_client_metadata", "response_types"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, http.MethodPost, m.RegistrationEndpoint, tc.body)
			var e struct {
				Error       string `json:"error"`
				Description string `json:"error_description"`
			}
			if code != 400 || json.Unmarshal([]byte(body), &e) != nil || e.Error != tc.code || !strings.Contains(e.Description, tc.field) {
				t.Fatalf("%d %s, want 400 %s naming %s", code, body, tc.code, tc.field)
			}
		})
	}
}
