package session

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTableTakes pins the methods the session dialect hands to the go-sdk:
// any other is refused before it with -32601 and status 200.
func TestTableTakes(t *testing.T) {
	taken := []string{
		"completion/complete", "server/discover", "initialize", "ping", "prompts/list", "prompts/get",
		"tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
		"logging/setLevel", "resources/subscribe", "subscriptions/listen", "resources/unsubscribe",
		"notifications/cancelled", "notifications/initialized", "notifications/roots/list_changed",
		"notifications/progress", "tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list",
	}
	for _, method := range taken {
		if e, bad := sdkMethodUnknown(method, nil); bad {
			t.Errorf("%s is refused: %+v", method, e)
		}
	}
	if len(table) != len(taken) {
		t.Errorf("the table has %d methods, want %d", len(table), len(taken))
	}
	e, bad := sdkMethodUnknown("acme/search", []byte("1"))
	if !bad || e.Status != http.StatusOK || e.Code != -32601 {
		t.Errorf("acme/search: %+v, %v, want -32601 with status 200", e, bad)
	}
}

// TestTableRegisters registers the table's own methods with a go-sdk
// server: the SDK must take each (none shadows a standard method).
func TestTableRegisters(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	if err := (&taskMethods{}).registerMethods(server); err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list"} {
		if table[method].register == nil {
			t.Errorf("%s: no registration", method)
		}
	}
}

// TestTaskRequested pins the 2025-11-25 task field of the methods that
// have one.
func TestTaskRequested(t *testing.T) {
	cases := []struct {
		method, params string
		want           bool
	}{
		{"tools/call", `{"name":"t","task":{}}`, true},
		{"tools/call", `{"name":"t"}`, false},
		{"initialize", `{"capabilities":{"tasks":{}}}`, true},
		{"initialize", `{"capabilities":{}}`, false},
		{"tasks/get", `{"task":{}}`, false},
	}
	for _, c := range cases {
		if got := taskRequested(c.method, paramsOf(t, c.params)); got != c.want {
			t.Errorf("taskRequested(%s, %s) = %v, want %v", c.method, c.params, got, c.want)
		}
	}
}

// paramsOf decodes raw, a params object.
func paramsOf(t *testing.T, raw string) map[string]json.RawMessage {
	t.Helper()
	var p map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	return p
}
