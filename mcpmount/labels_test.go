package mcpmount

import (
	"testing"

	"github.com/openwop/temporal-mcp/mcpmount/internal/modern"
	"github.com/openwop/temporal-mcp/mcpmount/internal/session"
)

// TestMethodLabels pins the metric label of every method the mount knows
// (and of one it does not): the dialects' tables must label a method alike,
// since a refusal at the door is counted before the dialect is known.
func TestMethodLabels(t *testing.T) {
	want := map[string]string{
		"server/discover": "server/discover", "initialize": "initialize", "ping": "ping",
		"tools/list": "tools/list", "tools/call": "tools/call",
		"tasks/get": "tasks/get", "tasks/update": "tasks/update", "tasks/cancel": "tasks/cancel",
		"tasks/result": "tasks/result", "tasks/list": "tasks/list",
		"resources/list": "resources/list", "resources/read": "resources/read",
		"prompts/list": "prompts/list", "prompts/get": "prompts/get",
		"resources/templates/list": "other", "subscriptions/listen": "other", "completion/complete": "other",
		"logging/setLevel": "other", "resources/subscribe": "other", "notifications/cancelled": "other",
	}
	for method, label := range want {
		got, ok := methodLabel(method)
		if !ok || got != label {
			t.Errorf("methodLabel(%q) = %q, %v, want %q", method, got, ok, label)
		}
		if m, ok := modern.Label(method); ok {
			if s, ok := session.Label(method); ok && s != m {
				t.Errorf("%s: the 2026-07-28 table labels it %q, the session dialect's %q", method, m, s)
			}
		}
	}
	if got, ok := methodLabel("acme/search"); ok {
		t.Errorf("methodLabel(acme/search) = %q, want none", got)
	}
}
