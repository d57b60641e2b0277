package auth_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
)

// TestOAuthInsufficientScope: the refusal of a request for a tool whose
// scopes the token lacks is a 403 whose challenge names the scopes every
// request needs and the tool's, once each, and the metadata, as the
// required scopes' refusal does; without a resource server it names the
// tool's scopes alone.
func TestOAuthInsufficientScope(t *testing.T) {
	// An issuer nothing answers: the refusal needs no discovery.
	o, err := auth.NewOAuth(auth.OAuthOptions{Issuers: []string{"https://issuer.example.test"}, Resource: resource,
		TenantClaim: "tenant", RequiredScopes: []string{"mcp"}, DiscoveryRetry: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	r := o.InsufficientScope("refunds:write", "mcp")
	want := `Bearer error="insufficient_scope", error_description="insufficient scope: this request needs the scope mcp refunds:write", ` +
		`resource_metadata="https://wop.example.test/.well-known/oauth-protected-resource/mcp", scope="mcp refunds:write"`
	if r.Status != http.StatusForbidden || r.Code != auth.CodeInsufficientScope || r.Challenge() != want {
		t.Fatalf("refusal %d %q %q, want 403 %q", r.Status, r.Code, r.Challenge(), want)
	}
	var none *auth.OAuth
	if got := none.InsufficientScope("refunds:write").Challenge(); got !=
		`Bearer error="insufficient_scope", error_description="insufficient scope: this request needs the scope refunds:write", scope="refunds:write"` {
		t.Fatalf("without a resource server: %q", got)
	}
}
