package repocheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxTrackedBytes is the largest file the repository may track.
const maxTrackedBytes = 2 << 20

// executableMagic are the first bytes of the executable formats a build
// produces here or elsewhere: ELF, Mach-O (both byte orders, 32 and 64
// bits, universal), PE (MZ) and WebAssembly.
var executableMagic = [][]byte{
	{0x7f, 'E', 'L', 'F'},
	{0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf},
	{0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe},
	{0xca, 0xfe, 0xba, 0xbe},
	{'M', 'Z'},
	{0x00, 'a', 's', 'm'},
}

// repoRoot is the top of the git checkout that holds this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout (%v): nothing tracked to check", err)
	}
	return strings.TrimSpace(string(out))
}

// TestTrackedFiles fails for a tracked file that is a built executable or
// larger than 2 MiB: the repository holds source, docs and small fixtures.
func TestTrackedFiles(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		if problem := checkTracked(filepath.Join(root, name)); problem != "" {
			t.Errorf("%s: %s", name, problem)
		}
	}
}

// checkTracked returns what is wrong with the tracked file at path, or "".
// A file deleted in the work tree but still tracked is not checked.
func checkTracked(path string) string {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return ""
		}
		return err.Error()
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	if info.Size() > maxTrackedBytes {
		return fmt.Sprintf("%d bytes: tracked files must be at most %d (ignore data and build output in .gitignore)",
			info.Size(), maxTrackedBytes)
	}
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	for _, magic := range executableMagic {
		if n >= len(magic) && bytes.Equal(head[:len(magic)], magic) {
			return "a built executable: delete it and ignore it in .gitignore"
		}
	}
	return ""
}

// listedPackage is what go list -json says of a package.
type listedPackage struct {
	ImportPath   string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
	Module       *struct{ Path string }
}

// TestLayers fails for a production import that runs from a lower layer to
// a higher one, for a package no layer names, and for a public package
// that imports an internal one (other than the leaf libraries of
// publicMayImport, and its own implementation under <package>/internal/,
// whose types it must not export). Test files may import anything.
func TestLayers(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		for _, problem := range checkImports(p) {
			t.Error(problem)
		}
	}
}

// checkImports returns the layering problems of one package.
func checkImports(p listedPackage) []string {
	if p.Module == nil {
		return nil
	}
	prefix := p.Module.Path + "/"
	rel := strings.TrimPrefix(p.ImportPath, prefix)
	from, ok := layerOf(rel)
	if !ok {
		return []string{fmt.Sprintf("%s: no layer (add it to internal/testing/repocheck/layers.go and docs/architecture.md)", rel)}
	}
	var problems []string
	for _, imp := range p.Imports {
		if !strings.HasPrefix(imp, prefix) {
			continue
		}
		dep := strings.TrimPrefix(imp, prefix)
		to, ok := layerOf(dep)
		switch {
		case !ok:
			continue // reported as the package it is
		case to > from:
			problems = append(problems, fmt.Sprintf("%s (layer %d) imports %s (layer %d): a lower layer must not import a higher one",
				rel, from, dep, to))
		case isPublic(rel) && isInternal(dep) && !publicMayImport[dep] && !strings.HasPrefix(dep, rel+"/internal/"):
			problems = append(problems, fmt.Sprintf("%s is public and imports %s: its contract must not live in internal/", rel, dep))
		}
	}
	return problems
}

// TestAuthorLibraries fails when an author library (workflows,
// workflows/workflowstest, activities: the packages a tool's worker and
// its tests link) depends on the run service or a protocol edge, directly
// or through another package, or when its tests import one: what the
// server and a worker share is the contract (signals and what is under it,
// e.g. the answer check of signals/answers), never the server.
func TestAuthorLibraries(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	checked := 0
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		if p.Module != nil && isAuthorLibrary(strings.TrimPrefix(p.ImportPath, p.Module.Path+"/")) {
			checked++
		}
		for _, problem := range checkAuthorLibrary(p) {
			t.Error(problem)
		}
	}
	if checked == 0 {
		t.Fatal("no author library package found: is the table in layers.go current?")
	}
}

// checkAuthorLibrary returns the problems of one package with serverOnly:
// none when it is not an author library.
func checkAuthorLibrary(p listedPackage) []string {
	if p.Module == nil {
		return nil
	}
	prefix := p.Module.Path + "/"
	rel := strings.TrimPrefix(p.ImportPath, prefix)
	if !isAuthorLibrary(rel) {
		return nil
	}
	var problems []string
	report := func(how string, imports []string) {
		for _, imp := range imports {
			if !strings.HasPrefix(imp, prefix) {
				continue
			}
			if name := serverPackage(strings.TrimPrefix(imp, prefix)); name != "" {
				problems = append(problems, fmt.Sprintf("%s %s %s: an author library shares the contract (signals) with the server, never the server's %s",
					rel, how, strings.TrimPrefix(imp, prefix), name))
			}
		}
	}
	report("depends on", p.Deps)
	report("has tests that import", append(append([]string(nil), p.TestImports...), p.XTestImports...))
	return problems
}

// TestCheckAuthorLibrary: the rule of TestAuthorLibraries catches a
// dependency on the server through another package and a test's import,
// and leaves the contract and every other package alone.
func TestCheckAuthorLibrary(t *testing.T) {
	const mod = "github.com/openwop/temporal-mcp/"
	module := &struct{ Path string }{Path: strings.TrimSuffix(mod, "/")}
	tests := []struct {
		name string
		p    listedPackage
		want []string // each a problem's prefix
	}{
		{"contract only", listedPackage{ImportPath: mod + "workflows/workflowstest", Module: module,
			Deps: []string{mod + "signals", mod + "signals/answers", mod + "catalog", "go.temporal.io/sdk/client"}}, nil},
		{"through another package", listedPackage{ImportPath: mod + "workflows", Module: module,
			Deps: []string{mod + "signals", mod + "runs"}}, []string{"workflows depends on runs"}},
		{"a test", listedPackage{ImportPath: mod + "activities", Module: module,
			XTestImports: []string{mod + "mcpmount/internal/ownership"}}, []string{"activities has tests that import mcpmount/internal/ownership"}},
		{"not an author library", listedPackage{ImportPath: mod + "audit", Module: module,
			Deps: []string{mod + "runs"}}, nil},
		{"a name that only starts alike", listedPackage{ImportPath: mod + "workflowsx", Module: module,
			Deps: []string{mod + "runs"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkAuthorLibrary(tt.p)
			if len(got) != len(tt.want) {
				t.Fatalf("problems = %q, want %d starting %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("problem %d = %q, want it to start %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}
