package catalog_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/catalog"
)

// FuzzLoadDeclarations loads arbitrary tools files
// (OPENWOP_TOOLS_FILE, catalog.LoadDeclarations): no panic, an error that
// names the file for anything it refuses, and declarations it accepts
// compile, name a task queue and a contract, and load the same after
// being written back. scripts/test.sh runs it for a few seconds;
// docs/testing.md says how to run it longer.
func FuzzLoadDeclarations(f *testing.F) {
	for _, file := range []string{
		`[{"name":`,
		`{"name":"a","description":"d","taskQueue":"q"}`,
		`[{"name":"a","description":"d","taskQueue":"q","taskqueue2":"x"}]`,
		`[{"name":"refund","description":"d","inputSchema":{"type":"object"}}]`,
		`[{"name":"a","description":"d","taskQueue":"q","inputSchema":{"type":"string"}}]`,
		`[{"name":"a","description":"d","taskQueue":"q","inputSchema":{"type":"object","properties":{"n":{"type":7}}}}]`,
		`[{"name":"a b","description":"d","taskQueue":"q"}]`,
		`[{"name":"a","description":"d","taskQueue":"q","contract":"grpc"}]`,
		`[{"name":"a","description":"d","taskQueue":"q","canSuspend":true,"contract":"plain"}]`,
		`[{"name":"refund","description":"d","taskQueue":"q","contract":"plain","scopes":["refunds write"]}]`,
		`[{"name":"refund","description":"d","taskQueue":"q"}]`,
		`[
  {"name": "summarize", "description": "Summarize a ticket.", "inputSchema": {"type": "object"}, "taskQueue": "py", "contract": "plain"},
  {"name": "approve", "description": "Approve a refund.", "inputSchema": {"type": "object"}, "taskQueue": "ts",
   "workflowType": "approveRefund", "contract": "openwop", "canSuspend": true, "tenants": ["acme"], "scopes": ["refunds:approve"]}
]`,
		`[{"name":"refund","description":"Refund an order.","inputSchema":{"type":"object","properties":{"orderId":{"type":"string"},"amountCents":{"type":"integer","minimum":1}},"required":["orderId","amountCents"]},"taskSupport":"optional","taskQueue":"q","workflowType":"refund.v1","contract":"plain",
  "outputSchema":{"type":"object","properties":{"refunded":{"type":"boolean"}},"required":["refunded"]},"annotations":{"title":"Refund","destructiveHint":true},"runTimeout":"1h"}]`,
		`[{"name":"a","description":"d","taskQueue":"q","contract":"openwop","preRunInputs":[{"key":"k","message":"m","schema":{"type":"object"}}]}]`,
		`[{"name":"a","description":"d","taskQueue":"q","contract":"plain","inputSchema":{"type":"object","$ref":"#/$defs/x","$defs":{"x":{"$ref":"#/$defs/x"}}}}]`,
		`[]`, `null`, ``, `[null]`, `[{}]`,
	} {
		f.Add([]byte(file))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, file []byte) {
		path := filepath.Join(dir, "tools.json")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		specs, err := catalog.LoadDeclarations(path)
		if err != nil {
			if !strings.Contains(err.Error(), "tool declarations") {
				t.Fatalf("error %q does not say it is about the tool declarations", err)
			}
			return
		}
		for _, s := range specs {
			if s.TaskQueue == "" || !s.Contract.Valid() || s.Contract == "" {
				t.Fatalf("accepted %+v without a task queue or contract", s)
			}
			if _, err := catalog.Compile(s); err != nil {
				t.Fatalf("accepted a declaration that does not compile: %v", err)
			}
		}
		// Written back, the declarations load the same.
		once, err := json.Marshal(specs)
		if err != nil {
			t.Fatalf("encode the accepted declarations: %v", err)
		}
		if specs == nil {
			return // null: no declarations
		}
		if err := os.WriteFile(path, once, 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := catalog.LoadDeclarations(path)
		if err != nil {
			t.Fatalf("the declarations written back do not load: %v\n%s", err, once)
		}
		twice, err := json.Marshal(again)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("round trip changed the declarations:\n%s\n%s", once, twice)
		}
	})
}
