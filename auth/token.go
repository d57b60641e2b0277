package auth

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// KindOAuth is the Kind of the Subject of an OAuth access token.
const KindOAuth = "oauth"

// maxTokenBytes bounds the access tokens decoded.
const maxTokenBytes = 16 << 10

// joseAlgs are signingAlgs as go-jose names them.
var joseAlgs = func() []jose.SignatureAlgorithm {
	out := make([]jose.SignatureAlgorithm, len(signingAlgs))
	for i, a := range signingAlgs {
		out[i] = jose.SignatureAlgorithm(a)
	}
	return out
}()

// Verify validates an access token and returns its caller: the issuer
// must be configured and reachable, the signature one of the issuer's
// published keys with an asymmetric algorithm, aud must contain the
// resource, exp and nbf must hold (with the clock skew), and the token
// must name a subject and a valid tenant. Any failure is a 401
// invalid_token Refusal whose reason names what was wrong (never the
// token).
func (o *OAuth) Verify(ctx context.Context, token string) (signals.Subject, error) {
	iss, err := PeekIssuer(token)
	if err != nil {
		return signals.Subject{}, o.refusal("invalid token: "+err.Error(), ErrInvalidCredential)
	}
	is := o.issuers[iss]
	if is == nil {
		return signals.Subject{}, o.refusal(fmt.Sprintf("invalid token: the issuer %q is not accepted here", iss), ErrInvalidCredential)
	}
	is.mu.Lock()
	v := is.verifier
	is.mu.Unlock()
	if v == nil {
		return signals.Subject{}, o.refusal(fmt.Sprintf("invalid token: the keys of the issuer %q could not be fetched yet; retry later", iss), ErrInvalidCredential)
	}
	idt, err := v.Verify(ctx, token)
	if err != nil {
		return signals.Subject{}, o.refusal("invalid token: "+describe(err), ErrInvalidCredential)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return signals.Subject{}, o.refusal("invalid token: its claims are not a JSON object", ErrInvalidCredential)
	}
	s, err := o.subject(iss, idt.Subject, claims)
	if err != nil {
		return signals.Subject{}, o.refusal("invalid token: "+err.Error(), ErrInvalidCredential)
	}
	return s, nil
}

// subject maps the verified claims to the caller.
func (o *OAuth) subject(iss, sub string, claims map[string]any) (signals.Subject, error) {
	if nbf, ok := claims["nbf"].(float64); ok && time.Unix(int64(nbf), 0).After(time.Now().Add(o.opts.ClockSkew)) {
		return signals.Subject{}, errors.New("it is not valid yet (nbf)")
	}
	if sub == "" {
		return signals.Subject{}, errors.New("it names no subject (sub)")
	}
	tenant, ok := Claim(claims, o.opts.TenantClaim).(string)
	switch {
	case !ok || tenant == "":
		return signals.Subject{}, fmt.Errorf("it has no tenant claim %q (a string)", o.opts.TenantClaim)
	case !runid.ValidTenant(tenant) || strings.HasPrefix(tenant, "anon:"):
		return signals.Subject{}, fmt.Errorf("its tenant claim %q is not a valid tenant ([A-Za-z0-9._~-]{1,128})", o.opts.TenantClaim)
	}
	s := signals.Subject{Issuer: iss, SubjectID: sub, Tenant: tenant, Kind: KindOAuth, Scoped: true}
	if o.opts.GroupsClaim != "" {
		s.Groups = Strings(Claim(claims, o.opts.GroupsClaim))
	}
	// scope (RFC 9068, RFC 8693) is one space-separated string; some
	// providers send scp, an array.
	s.Scopes = Strings(claims["scope"])
	if len(s.Scopes) == 0 {
		s.Scopes = Strings(claims["scp"])
	}
	return s, nil
}

// describe turns a go-oidc verification error into a reason for the
// caller.
func describe(err error) string {
	var exp *oidc.TokenExpiredError
	switch {
	case errors.As(err, &exp):
		return "it expired at " + exp.Expiry.UTC().Format(time.RFC3339)
	case strings.Contains(err.Error(), "audience"):
		return "it was not issued for this resource (aud): " + strings.TrimPrefix(err.Error(), "oidc: ")
	case strings.Contains(err.Error(), "signature"), strings.Contains(err.Error(), "fetching keys"):
		return "its signature does not verify against the issuer's published keys"
	}
	return strings.TrimPrefix(err.Error(), "oidc: ")
}

// PeekIssuer returns the iss claim of a JWT signed with one of the
// accepted (asymmetric) algorithms, without verifying it: it selects the
// issuer whose keys then verify the token.
func PeekIssuer(token string) (string, error) {
	if len(token) > maxTokenBytes {
		return "", fmt.Errorf("it is longer than %d bytes", maxTokenBytes)
	}
	t, err := jwt.ParseSigned(token, joseAlgs)
	if err != nil {
		return "", errors.New("not a JWT signed with an accepted algorithm (" + strings.Join(signingAlgs, ", ") + ")")
	}
	var c struct {
		Issuer string `json:"iss"`
	}
	if err := t.UnsafeClaimsWithoutVerification(&c); err != nil {
		return "", errors.New("its claims are not a JSON object")
	}
	if c.Issuer == "" {
		return "", errors.New("it names no issuer (iss)")
	}
	return c.Issuer, nil
}

// Claim returns the claim name of claims: the top-level member of that
// name, else the value at the dot-separated path ("realm_access.roles");
// nil when there is none.
func Claim(claims map[string]any, name string) any {
	if v, ok := claims[name]; ok {
		return v
	}
	var cur any = claims
	for part := range strings.SplitSeq(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[part]; !ok {
			return nil
		}
	}
	return cur
}

// Strings reads a claim that lists strings: an array of strings, one
// space-separated string, or an object whose members are the values (as
// Zitadel's project roles claim). Other values give nil.
func Strings(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case map[string]any:
		return slices.Sorted(maps.Keys(v))
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
