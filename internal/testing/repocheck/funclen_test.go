package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a production function may be, from its func
// keyword to its closing brace: short enough to read at once.
const maxFuncLines = 100

// TestFunctionLength fails for a production function (not in a _test.go
// file, not in a test-only package under internal/testing) longer than
// maxFuncLines.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	err := productionFiles(repoRoot(t), nil, func(path, rel string) error {
		for _, problem := range longFunctions(fset, path, rel) {
			t.Error(problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// productionFiles calls visit with the path, and the path relative to
// root, of each production Go file below root: not a _test.go file, not in
// a directory skippedDir or skip (nil: none) names.
func productionFiles(root string, skip func(rel string) bool, visit func(path, rel string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skippedDir(rel, d.Name()) || skip != nil && skip(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		return visit(path, rel)
	})
}

// skippedDir reports whether the directory at rel holds no production
// code: test-only packages, test data, dependencies and dot directories.
func skippedDir(rel, name string) bool {
	return rel == "internal/testing" || name == "testdata" || name == "node_modules" ||
		(strings.HasPrefix(name, ".") && rel != ".")
}

// longFunctions returns a problem for each function of the file at path
// longer than maxFuncLines.
func longFunctions(fset *token.FileSet, path, rel string) []string {
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", rel, err)}
	}
	var problems []string
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		var name string
		switch fn := n.(type) {
		case *ast.FuncDecl:
			body, name = fn.Body, fn.Name.Name
		case *ast.FuncLit:
			body, name = fn.Body, "func literal"
		default:
			return true
		}
		if body == nil {
			return true
		}
		start, end := fset.Position(n.Pos()).Line, fset.Position(body.End()).Line
		if lines := end - start + 1; lines > maxFuncLines {
			problems = append(problems, fmt.Sprintf("%s:%d: %s is %d lines; at most %d", rel, start, name, lines, maxFuncLines))
		}
		return true
	})
	return problems
}
