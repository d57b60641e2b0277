package modern

import "testing"

// TestTable pins what the 2026-07-28 dialect serves and which params field
// each method's Mcp-Name header mirrors, as the wire reference fixes them.
func TestTable(t *testing.T) {
	cases := []struct {
		method, field string
		served        bool
	}{
		{"server/discover", "", true},
		{"tools/list", "", true},
		{"tools/call", "name", true},
		{"tasks/get", "taskId", true},
		{"tasks/update", "taskId", true},
		{"tasks/cancel", "taskId", true},
		{"resources/read", "uri", true},
		{"resources/list", "", true},
		{"resources/templates/list", "", true},
		{"subscriptions/listen", "", true},
		// Checked, then refused: Mcp-Name first, then -32601.
		{"prompts/get", "name", false},
		{"tasks/result", "", false},
		{"tasks/list", "", false},
		{"initialize", "", false},
		{"ping", "", false},
		{"prompts/list", "", false},
	}
	for _, c := range cases {
		if got := Served(c.method); got != c.served {
			t.Errorf("Served(%q) = %v, want %v", c.method, got, c.served)
		}
		field, ok := NameField(c.method)
		if field != c.field || ok != (c.field != "") {
			t.Errorf("NameField(%q) = %q, %v, want %q", c.method, field, ok, c.field)
		}
	}
	for method, rt := range table {
		if rt.served() && !rt.call && !rt.listen && rt.answer == nil {
			t.Errorf("%s is served but has no answer", method)
		}
		if rt.call && rt.listen {
			t.Errorf("%s is both tools/call and subscriptions/listen", method)
		}
	}
}
