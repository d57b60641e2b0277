package repocheck

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goFileRefRE finds the name of a Go file in a comment: server.go,
// mcpmount/internal/session/http.go. A pattern (*_test.go, <name>.go, a
// _test.go file) is not one.
var goFileRefRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./*<>{}-])((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9][A-Za-z0-9_]*\.go)\b`)

// goFiles is the set of Go files git tracks, for looking up the files
// comments name.
type goFiles struct {
	paths map[string]bool // relative to the root, slash-separated
	bases map[string]bool // the last element of each path
	tops  map[string]bool // the first element of each path in a directory
}

// trackedGoFiles returns the Go files git tracks below root, sorted.
func trackedGoFiles(t *testing.T, root string) ([]string, goFiles) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "*.go")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	names := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	set := goFiles{paths: map[string]bool{}, bases: map[string]bool{}, tops: map[string]bool{}}
	for _, name := range names {
		set.paths[name] = true
		set.bases[path.Base(name)] = true
		if dir, _, ok := strings.Cut(name, "/"); ok {
			set.tops[dir] = true
		}
	}
	return names, set
}

// names reports whether ref, a Go file named in a comment of a file in
// the directory dir, exists or cannot be checked. A bare name exists in
// dir or anywhere in the repository; a path exists relative to dir or to
// the root, and one whose first element is not a directory at the root
// names another module's file, which is not checked.
func (s goFiles) names(ref, dir string) bool {
	if !strings.Contains(ref, "/") {
		return s.paths[path.Join(dir, ref)] || s.bases[ref]
	}
	first, _, _ := strings.Cut(ref, "/")
	return s.paths[ref] || s.paths[path.Join(dir, ref)] || !s.tops[first]
}

// TestGoFileReferencesInComments fails when a comment of a tracked Go file
// names a Go file that does not exist (see goFiles.names): a file was
// renamed or removed and a comment still sends its reader there.
func TestGoFileReferencesInComments(t *testing.T) {
	root := repoRoot(t)
	names, files := trackedGoFiles(t, root)
	fset := token.NewFileSet()
	for _, name := range names {
		f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(name)), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			continue // deleted in the work tree, or not Go this check can read
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				for _, m := range goFileRefRE.FindAllStringSubmatch(c.Text, -1) {
					if !files.names(m[1], path.Dir(name)) {
						t.Errorf("%s:%d: a comment names %s, which does not exist", name, fset.Position(c.Pos()).Line, m[1])
					}
				}
			}
		}
	}
}

// TestStaticcheckDocChecks fails when staticcheck.conf no longer turns on
// the checks that the doc comment of every exported name starts with that
// name (ST1020 functions, ST1021 types, ST1022 variables and constants),
// which scripts/test.sh's staticcheck run enforces.
func TestStaticcheckDocChecks(t *testing.T) {
	conf, err := os.ReadFile(filepath.Join(repoRoot(t), "staticcheck.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, check := range []string{"ST1020", "ST1021", "ST1022"} {
		if !strings.Contains(string(conf), `"`+check+`"`) {
			t.Errorf("staticcheck.conf does not turn on %s", check)
		}
	}
}
