package catalog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/workflows"
)

// TestDeclaredHandoffAfter: a declaration's handoffAfter is read as a Go
// duration string and checked (positive, at most MaxHandoffAfter); a bad
// one refuses the file with an error naming the file, the tool and the
// value. None leaves the server's bound (zero).
func TestDeclaredHandoffAfter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		field   string // the handoffAfter member, "" for none
		want    time.Duration
		problem string // what the error says; "" for none
	}{
		{"none", ``, 0, ""},
		{"seconds", `,"handoffAfter":"30s"`, 30 * time.Second, ""},
		{"negative", `,"handoffAfter":"-1s"`, 0, "handoff bound -1s is negative"},
		{"too long", `,"handoffAfter":"11m"`, 0, "longer than the maximum 10m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tools.json")
			decl := `[{"name":"report","description":"Builds a report.","taskQueue":"reports","contract":"plain"` + tc.field + `}]`
			if err := os.WriteFile(path, []byte(decl), 0o600); err != nil {
				t.Fatal(err)
			}
			specs, err := catalog.LoadDeclarations(path)
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) || !strings.Contains(err.Error(), path) {
					t.Fatalf("LoadDeclarations = %v, want an error naming %s and %q", err, path, tc.problem)
				}
				return
			}
			if err != nil || len(specs) != 1 || time.Duration(specs[0].HandoffAfter) != tc.want {
				t.Fatalf("LoadDeclarations = %+v, %v; want handoffAfter %v", specs, err, tc.want)
			}
		})
	}
}

// TestToolHandoffAfter: workflows.WithHandoffAfter sets the spec's
// handoff bound, and refuses one that is not positive.
func TestToolHandoffAfter(t *testing.T) {
	tool := workflows.NewTool("quick", "Answers at once.", quick, workflows.WithHandoffAfter(20*time.Second))
	if err := tool.Err(); err != nil || time.Duration(tool.Spec().HandoffAfter) != 20*time.Second {
		t.Fatalf("handoff bound = %v (%v), want 20s", tool.Spec().HandoffAfter, err)
	}
	if err := workflows.NewTool("quick", "Answers at once.", quick, workflows.WithHandoffAfter(0)).Err(); err == nil ||
		!strings.Contains(err.Error(), "handoff bound 0s is not positive") {
		t.Fatalf("a zero handoff bound: %v", err)
	}
}
