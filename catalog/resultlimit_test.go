package catalog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/workflows"
)

// TestDeclaredResultLimit: a declaration's resultLimit is kept when it is
// from MinResultLimit to MaxResultLimit, and any other value refuses the
// file with an error naming the file, the tool and the value. None leaves
// the server's limit (zero).
func TestDeclaredResultLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		field   string // the resultLimit member, "" for none
		want    int
		problem string // what the error says; "" for none
	}{
		{"none", ``, 0, ""},
		{"smallest", `,"resultLimit":1000`, catalog.MinResultLimit, ""},
		{"largest", `,"resultLimit":100000000`, catalog.MaxResultLimit, ""},
		{"too small", `,"resultLimit":999`, 0, "result limit 999"},
		{"negative", `,"resultLimit":-5`, 0, "result limit -5"},
		{"too large", `,"resultLimit":100000001`, 0, "result limit 100000001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tools.json")
			decl := `[{"name":"report","description":"Builds a report.","taskQueue":"reports","contract":"plain"` + tc.field + `}]`
			if err := os.WriteFile(path, []byte(decl), 0o600); err != nil {
				t.Fatal(err)
			}
			specs, err := catalog.LoadDeclarations(path)
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "report") {
					t.Fatalf("LoadDeclarations = %v, want an error naming %s, the tool and %q", err, path, tc.problem)
				}
				return
			}
			if err != nil || len(specs) != 1 || specs[0].ResultLimit != tc.want {
				t.Fatalf("LoadDeclarations = %+v, %v; want resultLimit %d", specs, err, tc.want)
			}
		})
	}
}

// TestToolResultLimit: workflows.WithResultLimit sets the spec's result
// limit and refuses one out of range; Compile refuses a spec whose limit
// is out of range, naming the tool.
func TestToolResultLimit(t *testing.T) {
	tool := workflows.NewTool("quick", "Answers at once.", quick, workflows.WithResultLimit(20_000))
	if err := tool.Err(); err != nil || tool.Spec().ResultLimit != 20_000 {
		t.Fatalf("result limit = %d (%v), want 20000", tool.Spec().ResultLimit, err)
	}
	for _, n := range []int{0, -1, catalog.MinResultLimit - 1, catalog.MaxResultLimit + 1} {
		if err := workflows.NewTool("quick", "Answers at once.", quick, workflows.WithResultLimit(n)).Err(); err == nil ||
			!strings.Contains(err.Error(), "result limit") {
			t.Fatalf("WithResultLimit(%d): %v, want an error naming the result limit", n, err)
		}
	}
	spec := tool.Spec()
	spec.ResultLimit = 10
	if _, err := catalog.Compile(spec); err == nil || !strings.Contains(err.Error(), "tool quick") || !strings.Contains(err.Error(), "result limit 10") {
		t.Fatalf("Compile with result limit 10: %v, want an error naming the tool and the limit", err)
	}
}
