package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// methodNamesFile is the one production file of the MCP mount that spells
// the names of JSON-RPC methods; everything else names them through its
// constants, and each dialect's method table is keyed by them.
const methodNamesFile = "mcpmount/internal/methods/methods.go"

// methodName matches a string that is the name of an MCP method or
// notification ("tasks/get", "notifications/progress", "initialize").
var methodName = regexp.MustCompile(`^(?:(?:tools|tasks|resources|prompts|subscriptions|notifications|server|completion|logging|elicitation|sampling|roots)/[A-Za-z_/]+|initialize|ping)$`)

// TestMethodNamesInOnePlace fails when a string literal of production code
// under mcpmount is a method name outside methodNamesFile: a method is
// added, served, checked and counted by a constant and a row of its
// dialect's table, not by names spelled where they are used.
func TestMethodNamesInOnePlace(t *testing.T) {
	root := repoRoot(t)
	fset := token.NewFileSet()
	err := productionFiles(filepath.Join(root, "mcpmount"), nil, func(path, rel string) error {
		rel = "mcpmount/" + rel
		if rel == methodNamesFile {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && methodName.MatchString(s) {
				t.Errorf("%s:%d: the method name %q is spelled here: name it by its constant in %s",
					rel, fset.Position(lit.Pos()).Line, s, methodNamesFile)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
