package auth_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/oidctest"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// The fuzz targets of what a caller (a bearer token) and an issuer (its
// JWKS document) send the resource server. scripts/test.sh runs each for
// a few seconds; docs/testing.md says how to run them longer.

// fuzzTokenSeeds are tokens of the auth tests that need no provider.
var fuzzTokenSeeds = []string{
	"opaque-token-value",
	"eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJpc3MiOiJodHRwczovL2lzc3Vlci5leGFtcGxlIiwic3ViIjoiYSJ9.",
	"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJodHRwczovL2lzc3Vlci5leGFtcGxlIiwic3ViIjoiYSJ9.bm90LWEtcmVhbC1tYWMtYnV0LWxvbmctZW5vdWdoLTMyYg",
	"eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjV9.c2ln",
	"eyJhbGciOiJFUzI1NiJ9.W10.c2ln",
	"a.b.c", "..", "",
}

// checkRefusal checks a refusal of token: a 401 invalid_token Refusal
// whose reason and challenge do not contain the token.
func checkRefusal(t *testing.T, token string, err error) {
	t.Helper()
	var ref *auth.Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("err = %v, want a Refusal", err)
	}
	if ref.Status != http.StatusUnauthorized || ref.Code != auth.CodeInvalidToken {
		t.Fatalf("refusal %d %q, want 401 invalid_token", ref.Status, ref.Code)
	}
	if len(token) >= 16 && (strings.Contains(ref.Reason, token) || strings.Contains(ref.Challenge(), token)) {
		t.Fatalf("the refusal contains the token: %q", ref.Reason)
	}
	if len(ref.Reason) > 1024 {
		t.Fatalf("reason of %d bytes: %.80s...", len(ref.Reason), ref.Reason)
	}
}

// FuzzPeekIssuer reads the issuer of arbitrary tokens: no panic, an error
// for anything but a compact JWS with an accepted algorithm and an iss,
// and nothing read from a token above the size bound.
func FuzzPeekIssuer(f *testing.F) {
	for _, tok := range fuzzTokenSeeds {
		f.Add(tok)
	}
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2lzc3Vlci5leGFtcGxlIn0.c2ln")
	f.Add(strings.Repeat("a", 16<<10+1))
	f.Fuzz(func(t *testing.T, token string) {
		iss, err := auth.PeekIssuer(token)
		if err != nil {
			if iss != "" {
				t.Fatalf("PeekIssuer = %q with the error %v", iss, err)
			}
			return
		}
		if iss == "" || len(token) > 16<<10 || strings.Count(token, ".") != 2 {
			t.Fatalf("PeekIssuer(%q) = %q", token, iss)
		}
	})
}

// FuzzVerify verifies arbitrary tokens against a real provider
// (internal/testing/oidctest): no panic, every refusal a 401 invalid_token
// that does not repeat the token, and a token that verifies names the
// provider, a subject and a valid tenant.
func FuzzVerify(f *testing.F) {
	p := oidctest.Start(f, oidctest.Options{Audience: []string{resource}})
	o, err := auth.NewOAuth(auth.OAuthOptions{Issuers: []string{p.Issuer}, Resource: resource, TenantClaim: "tenant",
		GroupsClaim: "groups"})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(o.Close)
	select {
	case <-o.Ready(p.Issuer):
	case <-time.After(30 * time.Second):
		f.Fatalf("issuer not ready: %v", o.Unreachable())
	}
	good := func() map[string]any {
		c := p.Claims("alice-1", []string{resource}, 24*time.Hour)
		c["tenant"], c["groups"], c["scope"] = "acme", []string{"finance"}, "tools:read"
		return c
	}
	for _, edit := range []func(map[string]any){
		func(map[string]any) {},
		func(c map[string]any) { c["aud"] = []string{"https://other.example/mcp"} },
		func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() },
		func(c map[string]any) { c["nbf"] = time.Now().Add(time.Hour).Unix() },
		func(c map[string]any) { delete(c, "tenant") },
		func(c map[string]any) { c["tenant"] = "acme/../globex" },
		func(c map[string]any) { c["tenant"] = []string{"acme"} },
		func(c map[string]any) { delete(c, "sub") },
		func(c map[string]any) { c["groups"] = map[string]any{"a": 1} },
	} {
		c := good()
		edit(c)
		tok, err := p.Sign(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tok)
	}
	if tok, err := p.SignUnpublished(good()); err == nil {
		f.Add(tok)
	}
	for _, tok := range fuzzTokenSeeds {
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, token string) {
		s, err := o.Verify(context.Background(), token)
		if err != nil {
			checkRefusal(t, token, err)
			return
		}
		if s.Issuer != p.Issuer || s.SubjectID == "" || !runid.ValidTenant(s.Tenant) || s.Kind != auth.KindOAuth {
			t.Fatalf("verified %+v", s)
		}
	})
}

// fuzzKeyD is the private scalar of the fuzz targets' P-256 signing key:
// fixed, so that a corpus entry means the same at every run.
const fuzzKeyD = "7c6bba4ae0cf37212ad591eac0527cce2af3c716599d6fe37c5729afac878449"

// fuzzIssuer is the issuer FuzzKeySet's transport stands for.
const fuzzIssuer = "https://issuer.example.test"

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// issuerTransport answers fuzzIssuer's discovery with its metadata and
// its jwks_uri with jwks: the bytes an issuer can send.
func issuerTransport(jwks []byte) http.RoundTripper {
	meta, _ := json.Marshal(map[string]any{
		"issuer": fuzzIssuer, "jwks_uri": fuzzIssuer + "/jwks",
		"authorization_endpoint": fuzzIssuer + "/authorize", "token_endpoint": fuzzIssuer + "/token",
		"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
	})
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body := meta
		if r.URL.Path == "/jwks" {
			body = jwks
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
	})
}

// FuzzKeySet verifies a token against arbitrary JWKS documents of its
// issuer, through the resource server's whole path (discovery, the key
// cache, go-oidc's key set and verifier): no panic, a 401 invalid_token
// for every document that does not publish the token's key, and a token
// that verifies does so with a public key of the document that is the
// signer's.
func FuzzKeySet(f *testing.F) {
	d, _ := hex.DecodeString(fuzzKeyD)
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		f.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		f.Fatal(err)
	}
	claims, _ := json.Marshal(map[string]any{"iss": fuzzIssuer, "sub": "alice-1", "aud": resource, "tenant": "acme",
		"exp": time.Now().Add(24 * time.Hour).Unix(), "iat": time.Now().Unix()})
	jws, err := signer.Sign(claims)
	if err != nil {
		f.Fatal(err)
	}
	token, err := jws.CompactSerialize()
	if err != nil {
		f.Fatal(err)
	}
	pub := jose.JSONWebKey{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}
	published, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{pub}})
	other := pub
	other.KeyID = "k2"
	renamed, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{other}})
	for _, doc := range []string{
		string(published), string(renamed),
		`{"keys":[]}`, `{}`, `[]`, `null`, `not json`, ``,
		`{"keys":[{"kty":"oct","kid":"k1","k":"c2VjcmV0","alg":"HS256"}]}`,
		`{"keys":[{"kty":"EC","kid":"k1","crv":"P-521","x":"AA","y":"AA"}]}`,
		`{"keys":[{"kty":"RSA","kid":"k1","n":"AQAB","e":"AQAB"}]}`,
		`{"keys":[{"kty":"OKP","kid":"k1","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`,
		`{"keys":[{"kty":"EC","kid":"k1","x5c":["bm90IGEgY2VydA"]}]}`,
	} {
		f.Add([]byte(doc), token)
	}
	f.Fuzz(func(t *testing.T, doc []byte, token string) {
		o, err := auth.NewOAuth(auth.OAuthOptions{Issuers: []string{fuzzIssuer}, Resource: resource, TenantClaim: "tenant",
			HTTPClient: &http.Client{Transport: issuerTransport(doc)}})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		select {
		case <-o.Ready(fuzzIssuer):
		case <-time.After(10 * time.Second):
			t.Fatalf("issuer not ready: %v", o.Unreachable())
		}
		s, err := o.Verify(context.Background(), token)
		if err != nil {
			checkRefusal(t, token, err)
			return
		}
		if len(doc) > 1<<20 {
			t.Fatalf("verified against a key set of %d bytes", len(doc))
		}
		var set jose.JSONWebKeySet
		if err := json.Unmarshal(doc, &set); err != nil {
			t.Fatalf("verified against a document go-jose cannot read: %v", err)
		}
		signed := false
		for _, k := range set.Keys {
			if ek, ok := k.Key.(*ecdsa.PublicKey); ok && ek.Equal(&key.PublicKey) {
				signed = true
			}
		}
		if !signed || s.Tenant != "acme" {
			t.Fatalf("verified %+v against a key set without the signer's key: %s", s, doc)
		}
	})
}
