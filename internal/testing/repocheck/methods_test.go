package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxMethods is the most methods a production type may have: a type with
// more holds more than one job. mcpMaxMethods is the tighter bound of the
// MCP mount's types (any package under mcpmount), whose split into the
// core and its dialects is kept by it.
const (
	maxMethods    = 30
	mcpMaxMethods = 25
)

// TestMethodsPerType fails for a type of production code (not in a
// _test.go file, not in a test-only package) with more than maxMethods
// methods, or more than mcpMaxMethods under mcpmount.
func TestMethodsPerType(t *testing.T) {
	root := repoRoot(t)
	fset := token.NewFileSet()
	counts := map[string]int{} // "package dir.Type" -> methods
	err := productionFiles(root, nil, func(path, rel string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv != nil && len(fn.Recv.List) == 1 {
				counts[filepath.Dir(rel)+"."+receiverType(fn.Recv.List[0].Type)]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var over []string
	for typ, n := range counts {
		limit := maxMethods
		if strings.HasPrefix(typ, "mcpmount/") || strings.HasPrefix(typ, "mcpmount.") {
			limit = mcpMaxMethods
		}
		if n > limit {
			over = append(over, fmt.Sprintf("%s has %d methods, want at most %d: split what it does into types of one job each", typ, n, limit))
		}
	}
	sort.Strings(over)
	for _, problem := range over {
		t.Error(problem)
	}
}

// receiverType is the name of a method's receiver type (T of T, *T, T[P]).
func receiverType(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverType(x.X)
	case *ast.IndexExpr:
		return receiverType(x.X)
	case *ast.IndexListExpr:
		return receiverType(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}
