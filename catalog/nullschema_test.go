package catalog_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
)

// TestNullSchemas: a schema written as JSON null declares none, as an
// absent one does: encoding/json writes a spec without schemas that way,
// so a tools file written back from loaded declarations (which
// FuzzLoadDeclarations found refused) loads again, and the tool has the
// empty object input schema and no output schema.
func TestNullSchemas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tools.json")
	file := `[{"name":"a","description":"d","taskQueue":"q","contract":"openwop","inputSchema":null,"outputSchema":null,
  "preRunInputs":[{"key":"k","message":"m","schema":null}]}]`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	specs, err := catalog.LoadDeclarations(path)
	if err != nil {
		t.Fatalf("LoadDeclarations = %v", err)
	}
	written, err := json.Marshal([]signals.ToolSpec{{Name: "b", Description: "d", TaskQueue: "q", Contract: signals.ContractPlain}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, written, 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := catalog.LoadDeclarations(path)
	if err != nil {
		t.Fatalf("LoadDeclarations of %s = %v", written, err)
	}
	for _, spec := range append(specs, again...) {
		tool, err := catalog.Compile(spec)
		if err != nil {
			t.Fatalf("Compile(%s) = %v", spec.Name, err)
		}
		if got := string(tool.InputSchema()); got != `{"type":"object"}` {
			t.Errorf("%s: InputSchema = %s, want the empty object schema", spec.Name, got)
		}
		if got := tool.OutputSchema(); got != nil {
			t.Errorf("%s: OutputSchema = %s, want none", spec.Name, got)
		}
		for _, in := range tool.Spec().PreRunInputs {
			if in.Schema != nil {
				t.Errorf("%s: pre-run input %s schema = %s, want none", spec.Name, in.Key, in.Schema)
			}
		}
		if _, err := tool.ValidateArguments(json.RawMessage(`{}`)); err != nil {
			t.Errorf("%s: ValidateArguments({}) = %v", spec.Name, err)
		}
	}
}
