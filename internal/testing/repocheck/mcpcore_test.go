package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMCPCoreNamesNoEdge fails when the MCP core (mcpmount/internal/core)
// reaches into what belongs to an edge: a dialect (any other mcpmount
// package but ownership, requeststate and methods), HTTP, or a go-sdk session. The
// core speaks in its own terms; a dialect decodes into them and encodes
// out of them, and offers the core what its transport can do through the
// core's small interfaces.
func TestMCPCoreNamesNoEdge(t *testing.T) {
	root := repoRoot(t)
	names, err := filepath.Glob(filepath.Join(root, "mcpmount", "internal", "core", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/openwop/temporal-mcp/mcpmount/internal/ownership":    true,
		"github.com/openwop/temporal-mcp/mcpmount/internal/requeststate": true,
		"github.com/openwop/temporal-mcp/mcpmount/internal/methods":      true,
	}
	forbiddenNames := map[string]bool{"ServerSession": true, "ClientSession": true, "ResponseWriter": true, "Request": true}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		base := filepath.Base(name)
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case path == "net/http" || strings.HasPrefix(path, "net/http/"):
				t.Errorf("%s imports %s: the core writes no HTTP; a dialect does", base, path)
			case strings.HasPrefix(path, "github.com/openwop/temporal-mcp/mcpmount") && !allowed[path] &&
				path != "github.com/openwop/temporal-mcp/mcpmount/internal/core":
				t.Errorf("%s imports %s: the core imports no dialect", base, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "mcp" && forbiddenNames[sel.Sel.Name] {
				t.Errorf("%s: %s names mcp.%s: the core knows no go-sdk session; the dialect offers what it needs through the core's interfaces",
					base, fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

// mcpShared are the packages under mcpmount/internal that are no dialect:
// the core, what every dialect shares, and the mount's leaf libraries
// (request ownership, sealed request state, the names of the methods).
var mcpShared = map[string]bool{"core": true, "wire": true, "ownership": true, "requeststate": true, "methods": true}

// TestMCPDialectsApart fails when a wire dialect of the mount (a package
// under mcpmount/internal other than core and wire) imports another
// dialect, or when core or wire imports a dialect: each dialect decodes
// its own wire into the core's terms, and shares only core and wire.
func TestMCPDialectsApart(t *testing.T) {
	root := repoRoot(t)
	dirs, err := filepath.Glob(filepath.Join(root, "mcpmount", "internal", "*"))
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "github.com/openwop/temporal-mcp/mcpmount/internal/"
	fset := token.NewFileSet()
	dialects := 0
	for _, dir := range dirs {
		pkg := filepath.Base(dir)
		if !mcpShared[pkg] {
			dialects++
		}
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatalf("parse %s: %v", name, err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				dep, ok := strings.CutPrefix(path, prefix)
				if ok && dep != pkg && !mcpShared[dep] {
					t.Errorf("mcpmount/internal/%s (%s) imports the dialect %s: a dialect shares only core and wire", pkg, filepath.Base(name), dep)
				}
			}
		}
	}
	if dialects < 2 {
		t.Errorf("found %d dialect packages under mcpmount/internal, want the modern and the session ones", dialects)
	}
}

// runsImport is the run service's import path.
const runsImport = "github.com/openwop/temporal-mcp/runs"

// TestMCPOnlyCoreImportsRuns fails when a package under mcpmount/internal
// other than core imports the run service: the core is the only road from
// a dialect to runs (core.Tasks), so that every dialect inherits every
// rule the core applies to a read, an answer or a cancellation. Test files
// are not checked: a dialect's test may build a core over a run backend
// (runstest.Fake) and prepare its runs, which is wiring, not a road around
// the core.
func TestMCPOnlyCoreImportsRuns(t *testing.T) {
	root := repoRoot(t)
	dirs, err := filepath.Glob(filepath.Join(root, "mcpmount", "internal", "*"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		pkg := filepath.Base(dir)
		if pkg == "core" {
			continue
		}
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatalf("parse %s: %v", name, err)
			}
			for _, imp := range f.Imports {
				if path, _ := strconv.Unquote(imp.Path.Value); path == runsImport {
					t.Errorf("mcpmount/internal/%s (%s) imports %s: only core reaches the run service; use core.Tasks",
						pkg, filepath.Base(name), runsImport)
				}
			}
		}
	}
}
