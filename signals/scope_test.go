package signals_test

import (
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

// TestValidScope: the RFC 6749 scope-token grammar.
func TestValidScope(t *testing.T) {
	tests := []struct {
		scope string
		want  bool
	}{
		{"mcp", true},
		{"refunds:write", true},
		{"https://api.example.com/refunds.write", true},
		{"!#$%&'()*+,-./:;<=>?@[]^_`{|}~", true},
		{"", false},
		{"two words", false},
		{`quo"te`, false},
		{`back\slash`, false},
		{"tab\there", false},
		{"caf\u00e9", false},
		{"del\x7f", false},
	}
	for _, tt := range tests {
		if got := signals.ValidScope(tt.scope); got != tt.want {
			t.Errorf("ValidScope(%q) = %v, want %v", tt.scope, got, tt.want)
		}
	}
}

// TestOfferedTo: a tool is offered to a caller of a tenant it is visible
// to whose credential grants all its scopes; an unscoped credential (an
// API key) grants every scope.
func TestOfferedTo(t *testing.T) {
	tool := signals.ToolSpec{Name: "refund", Tenants: []string{"acme"}, Scopes: []string{"refunds:read", "refunds:write"}}
	tests := []struct {
		name   string
		caller signals.Subject
		want   bool
	}{
		{"token with both scopes", signals.Subject{Tenant: "acme", Scoped: true, Scopes: []string{"mcp", "refunds:write", "refunds:read"}}, true},
		{"token with one scope", signals.Subject{Tenant: "acme", Scoped: true, Scopes: []string{"refunds:read"}}, false},
		{"token without scopes", signals.Subject{Tenant: "acme", Scoped: true}, false},
		{"API key", signals.Subject{Tenant: "acme"}, true},
		{"other tenant, both scopes", signals.Subject{Tenant: "globex", Scoped: true, Scopes: []string{"refunds:read", "refunds:write"}}, false},
	}
	for _, tt := range tests {
		if got := tool.OfferedTo(tt.caller); got != tt.want {
			t.Errorf("%s: OfferedTo = %v, want %v", tt.name, got, tt.want)
		}
	}
	if !(signals.ToolSpec{Name: "open"}).OfferedTo(signals.Subject{Tenant: "acme", Scoped: true}) {
		t.Error("a tool without scopes is not offered to a token without scopes")
	}
}
