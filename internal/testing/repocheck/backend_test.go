package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxBackendMethods is the most methods runs.Backend may have: the run
// operations, each once. A faster way to do one (a read that may be
// stale, a resolution from a held snapshot, a wait for what a run
// publishes) is an option of it, and what only an edge needs (the trace a
// run started in) is a function the assembly hands to that edge.
const maxBackendMethods = 8

// TestBackendMethods fails when runs.Backend, the interface every run
// service implementation and decorator repeats, has more than
// maxBackendMethods methods.
func TestBackendMethods(t *testing.T) {
	root := repoRoot(t)
	names, err := filepath.Glob(filepath.Join(root, "runs", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	methods := -1
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		for _, decl := range f.Decls {
			ast.Inspect(decl, func(n ast.Node) bool {
				spec, ok := n.(*ast.TypeSpec)
				if !ok || spec.Name.Name != "Backend" {
					return true
				}
				if it, ok := spec.Type.(*ast.InterfaceType); ok {
					methods = it.Methods.NumFields()
				}
				return false
			})
		}
	}
	switch {
	case methods < 0:
		t.Fatal("runs declares no Backend interface")
	case methods > maxBackendMethods:
		t.Errorf("runs.Backend has %d methods, want at most %d: make a faster twin of an operation an option of it, and hand what only an edge needs to that edge", methods, maxBackendMethods)
	}
}
