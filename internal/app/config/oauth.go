package config

import (
	"fmt"
	"strings"

	"github.com/openwop/temporal-mcp/auth"
)

// Environment variables of OAuth (Config.Server.OAuth). See docs/oauth.md.
const (
	// EnvOAuthIssuers lists the accepted authorization servers by issuer
	// URL (comma-separated). Set, it makes the server an OAuth resource
	// server; it needs EnvPublicURL and EnvOAuthTenantClaim.
	EnvOAuthIssuers = "OPENWOP_OAUTH_ISSUERS"
	// EnvOAuthTenantClaim names the token claim that holds the tenant.
	EnvOAuthTenantClaim = "OPENWOP_OAUTH_TENANT_CLAIM"
	// EnvOAuthGroupsClaim names the token claim that holds the caller's
	// groups or roles (approvers entries "group:<value>").
	EnvOAuthGroupsClaim = "OPENWOP_OAUTH_GROUPS_CLAIM"
	// EnvOAuthRequiredScopes lists the scopes every request needs (space-
	// or comma-separated).
	EnvOAuthRequiredScopes = "OPENWOP_OAUTH_REQUIRED_SCOPES"
)

// registeredClaims are the JWT claims that cannot hold a tenant or groups.
var registeredClaims = map[string]bool{
	"iss": true, "sub": true, "aud": true, "exp": true, "nbf": true, "iat": true, "jti": true,
	"scope": true, "scp": true, "client_id": true, "azp": true,
}

// loadOAuth reads the OAuth settings through get (the process environment,
// values trimmed); publicURL is the checked OPENWOP_PUBLIC_URL. It returns
// nil when OAuth is off (no issuer configured). An invalid setting, or a
// setting of OAuth without issuers, is an error naming the variable.
func loadOAuth(get func(string) string, publicURL string) (*auth.OAuthOptions, error) {
	issuers := splitList(get(EnvOAuthIssuers))
	if len(issuers) == 0 {
		for _, name := range []string{EnvOAuthTenantClaim, EnvOAuthGroupsClaim, EnvOAuthRequiredScopes} {
			if get(name) != "" {
				return nil, fmt.Errorf("%s is set but %s is not: the OAuth settings need the issuers", name, EnvOAuthIssuers)
			}
		}
		return nil, nil
	}
	for _, is := range issuers {
		if err := auth.CheckIssuerURL(is); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", EnvOAuthIssuers, is, err)
		}
	}
	if publicURL == "" {
		return nil, fmt.Errorf("%s is set but %s is not: the OAuth resource is <public URL>%s, which tokens must name in aud",
			EnvOAuthIssuers, EnvPublicURL, auth.ResourcePath)
	}
	opts := &auth.OAuthOptions{Issuers: issuers, Resource: publicURL + auth.ResourcePath}
	var err error
	if opts.TenantClaim, err = claimName(get, EnvOAuthTenantClaim, true); err != nil {
		return nil, err
	}
	if opts.GroupsClaim, err = claimName(get, EnvOAuthGroupsClaim, false); err != nil {
		return nil, err
	}
	for _, s := range strings.FieldsFunc(get(EnvOAuthRequiredScopes), func(r rune) bool { return r == ',' || r == ' ' }) {
		if !auth.ValidScope(s) {
			return nil, fmt.Errorf("%s: %q is not a scope (printable ASCII, no space, quote or backslash)", EnvOAuthRequiredScopes, s)
		}
		opts.RequiredScopes = append(opts.RequiredScopes, s)
	}
	return opts, nil
}

// claimName reads the claim named by the variable name.
func claimName(get func(string) string, name string, required bool) (string, error) {
	v := get(name)
	switch {
	case v == "" && required:
		return "", fmt.Errorf("%s is not set: with %s, name the token claim that holds the tenant (e.g. tenant, org_id, tid)",
			name, EnvOAuthIssuers)
	case v == "":
		return "", nil
	case registeredClaims[v]:
		return "", fmt.Errorf("%s=%q: a registered claim cannot hold it; name a claim of your provider's (e.g. tenant, groups)", name, v)
	case strings.ContainsAny(v, " \t,\"\\") || strings.HasPrefix(v, ".") || strings.HasSuffix(v, ".") || strings.Contains(v, ".."):
		return "", fmt.Errorf("%s=%q: not a claim name or dot-separated claim path", name, v)
	}
	return v, nil
}
