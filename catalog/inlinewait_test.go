package catalog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/workflows"
)

// TestDeclaredInlineWait: a declaration's inlineWait is read as a Go
// duration string ("0s" turns it off) and checked (at least zero, at most
// MaxInlineWait); a bad one refuses the file with an error naming the
// file, the tool and the value. None leaves the server's default.
func TestDeclaredInlineWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		field   string // the inlineWait member, "" for none
		want    *time.Duration
		problem string // what the error says; "" for none
	}{
		{"none", ``, nil, ""},
		{"off", `,"inlineWait":"0s"`, ptr(time.Duration(0)), ""},
		{"seconds", `,"inlineWait":"2s"`, ptr(2 * time.Second), ""},
		{"negative", `,"inlineWait":"-1s"`, nil, "inline wait -1s is negative"},
		{"too long", `,"inlineWait":"2m"`, nil, "longer than the maximum 1m0s"},
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
			if err != nil || len(specs) != 1 {
				t.Fatalf("LoadDeclarations = %+v, %v", specs, err)
			}
			got := specs[0].InlineWait
			if (got == nil) != (tc.want == nil) || got != nil && time.Duration(*got) != *tc.want {
				t.Fatalf("inlineWait = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestToolInlineWait: workflows.WithInlineWait sets the spec's inline
// wait, and refuses a negative one.
func TestToolInlineWait(t *testing.T) {
	tool := workflows.NewTool("quick", "Answers at once.", quick, workflows.WithInlineWait(3*time.Second))
	if err := tool.Err(); err != nil {
		t.Fatal(err)
	}
	if w := tool.Spec().InlineWait; w == nil || time.Duration(*w) != 3*time.Second {
		t.Fatalf("inline wait = %v, want 3s", w)
	}
	if err := workflows.NewTool("quick", "Answers at once.", quick, workflows.WithInlineWait(-time.Second)).Err(); err == nil ||
		!strings.Contains(err.Error(), "inline wait -1s is negative") {
		t.Fatalf("a negative inline wait: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// quick is a tool workflow that answers at once.
func quick(workflow.Context, struct{}) (string, error) { return "done", nil }
