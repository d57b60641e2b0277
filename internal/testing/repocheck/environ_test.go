package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// environReaders are the functions that read the process environment,
// by import path and name.
var environReaders = map[string][]string{
	"os":                                   {"Getenv", "LookupEnv", "Environ", "ExpandEnv"},
	"syscall":                              {"Getenv", "Environ"},
	"go.temporal.io/sdk/contrib/envconfig": {"EnvLookupOS"},
}

// TestLibrariesReadNoEnvironment fails for production code of a library
// package that reads the process environment: every variable is declared
// and read in internal/app/config (one table, checked against
// docs/configuration.md), and libraries take options. Only the commands
// (cmd/), the assembly (internal/app), the development tools
// (internal/cmd), test-only packages (internal/testing) and the example
// programs a user runs (examples/clients, examples/agent) may read it.
func TestLibrariesReadNoEnvironment(t *testing.T) {
	fset := token.NewFileSet()
	err := productionFiles(repoRoot(t), mayReadEnvironment, func(path, rel string) error {
		for _, problem := range environReads(fset, path, rel) {
			t.Error(problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// mayReadEnvironment reports whether the directory at rel holds code that
// may read the environment: the commands, the assembly and its
// configuration, the development tools, test-only packages and the example
// programs.
func mayReadEnvironment(rel string) bool {
	for _, dir := range []string{"cmd", "internal/app", "internal/cmd", "internal/testing", "examples/clients", "examples/agent"} {
		if rel == dir {
			return true
		}
	}
	return false
}

// environReads returns a problem for each use of an environReaders
// function in the file at path.
func environReads(fset *token.FileSet, path, rel string) []string {
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", rel, err)}
	}
	names := map[string]string{} // local name of an import -> its path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := environReaders[p]; !ok {
			continue
		}
		local := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			local = imp.Name.Name
		}
		names[local] = p
	}
	if len(names) == 0 {
		return nil
	}
	var problems []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || names[x.Name] == "" {
			return true
		}
		for _, fn := range environReaders[names[x.Name]] {
			if sel.Sel.Name == fn {
				problems = append(problems, fmt.Sprintf("%s:%d: %s.%s reads the environment in a library package; "+
					"declare the variable in internal/app/config and pass its value in an option",
					rel, fset.Position(sel.Pos()).Line, x.Name, fn))
			}
		}
		return true
	})
	return problems
}
