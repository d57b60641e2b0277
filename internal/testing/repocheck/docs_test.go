package repocheck

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/catalog"
)

// maxReadmeLines keeps README.md a front door: the manual is docs/.
const maxReadmeLines = 250

// readMarkdown parses the Markdown file at rel (relative to root).
func readMarkdown(t *testing.T, root, rel string) markdown {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return parseMarkdown(string(src))
}

// docFiles are the Markdown files the checks cover, relative to root:
// README.md and every .md file under docs/.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestReadmeLength fails when README.md grows past maxReadmeLines.
func TestReadmeLength(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move the detail into docs/", n, maxReadmeLines)
	}
}

// e2eExampleRE finds the example directories the e2e tests build.
var e2eExampleRE = regexp.MustCompile(`"(examples/[A-Za-z0-9_./-]+)"`)

// builtExamples returns the non-test Go sources of the examples/
// directories the end-to-end tests name (and so build and run), by path,
// and the test sources of those whose tests the test command runs.
func builtExamples(t *testing.T, root string) map[string]string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(root, "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tests, err := filepath.Glob(filepath.Join(root, "internal", "testing", "e2e", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, f := range tests {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range e2eExampleRE.FindAllStringSubmatch(string(src), -1) {
			dirs[m[1]] = true
		}
	}
	sources := map[string]string{}
	for dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.go"))
		tested := false
		for _, line := range strings.Split(string(script), "\n") {
			if strings.HasPrefix(line, "(cd "+dir+" && ") && strings.Contains(line, "go test") {
				tested = true
			}
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") && !tested {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, f)
			sources[filepath.ToSlash(rel)] = string(src)
		}
	}
	if len(sources) == 0 {
		t.Fatal("the e2e tests (internal/testing/e2e) build no examples/ directory with Go files")
	}
	return sources
}

// TestReadmeGoBlocks fails when a Go code block of README.md is not, word
// for word, part of a source file of an example the end-to-end tests
// build: what the README shows a tool author then compiles and runs in
// every test run.
func TestReadmeGoBlocks(t *testing.T) {
	root := repoRoot(t)
	sources := builtExamples(t, root)
	md := readMarkdown(t, root, "README.md")
	found := 0
	for _, b := range md.blocks {
		if b.lang != "go" {
			continue
		}
		found++
		if !containedIn(b.text, sources) {
			names := make([]string, 0, len(sources))
			for name := range sources {
				names = append(names, name)
			}
			sort.Strings(names)
			t.Errorf("README.md:%d: the Go block is not contained verbatim in any of %s (copy it from the example, or change both)",
				b.line, strings.Join(names, ", "))
		}
	}
	if found == 0 {
		t.Error("README.md has no Go block: the tool author's section should show the example's code")
	}
}

// containedIn reports whether text is part of one of sources.
func containedIn(text string, sources map[string]string) bool {
	for _, src := range sources {
		if strings.Contains(src, text) {
			return true
		}
	}
	return false
}

// TestReadmeJSONBlocks fails when a JSON block of README.md does not
// parse, or, for a JSON array (a declared-tools file for
// OPENWOP_TOOLS_FILE), does not load as the server loads that file.
func TestReadmeJSONBlocks(t *testing.T) {
	root := repoRoot(t)
	for _, b := range readMarkdown(t, root, "README.md").blocks {
		if b.lang != "json" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(b.text), &v); err != nil {
			t.Errorf("README.md:%d: the JSON block does not parse: %v", b.line, err)
			continue
		}
		if _, ok := v.([]any); !ok {
			continue
		}
		path := filepath.Join(t.TempDir(), "tools.json")
		if err := os.WriteFile(path, []byte(b.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := catalog.LoadDeclarations(path); err != nil {
			t.Errorf("README.md:%d: the declared tools do not load: %v", b.line, err)
		}
	}
}

// repoPathRE finds a path like ./scripts/test.sh or ./cmd/server in a
// shell block.
var repoPathRE = regexp.MustCompile(`(?:^|[\s=(])\./([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*)`)

// TestShellBlockPaths fails when a shell block of README.md or docs/ names
// a path of the repository (./<top-level entry>/...) that does not exist:
// a command moved and a page still runs it from its old place.
func TestShellBlockPaths(t *testing.T) {
	root := repoRoot(t)
	top := map[string]bool{}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "data" { // the default data directory, not tracked
			top[e.Name()] = true
		}
	}
	for _, file := range docFiles(t, root) {
		for _, b := range readMarkdown(t, root, file).blocks {
			if b.lang != "sh" && b.lang != "bash" && b.lang != "shell" {
				continue
			}
			for _, m := range repoPathRE.FindAllStringSubmatch(b.text, -1) {
				p := strings.TrimRight(m[1], ".")
				if !top[strings.Split(p, "/")[0]] {
					continue // a file of the user's, such as ./temporal.toml
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
					t.Errorf("%s:%d: the shell block names ./%s, which does not exist", file, b.line, p)
				}
			}
		}
	}
}

// TestDocLinks fails when a relative link of README.md or docs/ leads to
// no file, or to a heading its Markdown file does not have.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	parsed := map[string]markdown{}
	read := func(rel string) markdown {
		if md, ok := parsed[rel]; ok {
			return md
		}
		md := readMarkdown(t, root, rel)
		parsed[rel] = md
		return md
	}
	for _, file := range docFiles(t, root) {
		for _, l := range read(file).links() {
			if problem := checkLink(root, file, l.target, read); problem != "" {
				t.Errorf("%s:%d: link %s: %s", file, l.line, l.target, problem)
			}
		}
	}
}

// checkLink returns what is wrong with the link target of the Markdown
// file from (both relative to root), or "". Links with a scheme are not
// checked.
func checkLink(root, from, target string, read func(string) markdown) string {
	if u, err := url.Parse(target); err != nil {
		return err.Error()
	} else if u.Scheme != "" || u.Host != "" {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	rel := from
	if path != "" {
		unescaped, err := url.PathUnescape(path)
		if err != nil {
			return err.Error()
		}
		rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), unescaped)))
		if strings.HasPrefix(rel, "../") {
			return "leads out of the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return "no such file"
		}
	}
	if anchor == "" || !strings.HasSuffix(rel, ".md") {
		return ""
	}
	if !read(rel).anchors[anchor] {
		return "no heading with the anchor #" + anchor + " in " + rel
	}
	return ""
}

// TestArchitectureNamesLayers fails when docs/architecture.md does not
// name a package path of the layer table: the page describes exactly the
// layers this package enforces.
func TestArchitectureNamesLayers(t *testing.T) {
	root := repoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for key := range layers {
		name := strings.TrimSuffix(key, "/")
		if !strings.Contains(string(src), "`"+name+"`") && !strings.Contains(string(src), "`"+name+"/") {
			t.Errorf("docs/architecture.md does not name %s (layers.go has it): describe it in the layer table", name)
		}
	}
}

// docRefRE finds a reference to a page of the documentation in a source
// file: docs/<page>.md (or .json), or a README.md with its directory.
var docRefRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])((?:[A-Za-z0-9_-]+/)*(?:docs/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(?:md|json)|[A-Za-z0-9_-]+/README\.md))`)

// TestDocReferencesInCode fails when a comment or string of a tracked Go,
// shell or YAML file names a documentation page that does not exist: a
// page moved and the code still sends its reader there.
func TestDocReferencesInCode(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("git", "ls-files", "-z", "*.go", "*.sh", "*.yml", "*.yaml", "Dockerfile")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			continue // deleted in the work tree
		}
		for i, line := range strings.Split(string(src), "\n") {
			for _, m := range docRefRE.FindAllStringSubmatch(line, -1) {
				ref := m[1]
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(ref))); err == nil {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.Dir(name), filepath.FromSlash(ref))); err == nil {
					continue // relative to the file, as ../docs/openapi.json
				}
				t.Errorf("%s:%d: names %s, which does not exist", name, i+1, ref)
			}
		}
	}
}

var (
	// spanRE finds the code spans of a line of prose.
	spanRE = regexp.MustCompile("`([^`]+)`")
	// pathTokenRE finds a path in a code span: a/b, ./a/b, a/b.go:12.
	pathTokenRE = regexp.MustCompile(`(?:^|[\s(=,])(?:\./)?([A-Za-z0-9_-]+/[A-Za-z0-9_./-]*[A-Za-z0-9_])(?::[0-9]+(?:-[0-9]+)?)?`)
	// selectorRE is a Go selector after a package path: export.New.
	selectorRE = regexp.MustCompile(`\.[A-Z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*$`)
)

// trackedTopDirs returns the top-level directories git tracks files in.
func trackedTopDirs(t *testing.T, root string) map[string]bool {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	top := map[string]bool{}
	for _, name := range strings.Split(string(out), "\x00") {
		if dir, _, ok := strings.Cut(name, "/"); ok {
			top[dir] = true
		}
	}
	return top
}

// TestDocPaths fails when a code span of README.md or docs/ names a path
// of the repository (its first element a tracked top-level directory)
// that does not exist: a package or file moved and the page still sends
// its reader to the old place. A path with a placeholder (<set>, …) and a
// Go selector after a package path (telemetry/export.New) are understood.
func TestDocPaths(t *testing.T) {
	root := repoRoot(t)
	top := trackedTopDirs(t, root)
	for _, file := range docFiles(t, root) {
		for _, l := range readMarkdown(t, root, file).prose {
			for _, span := range spanRE.FindAllStringSubmatch(l.text, -1) {
				if strings.ContainsAny(span[1], "<>…*{}[]") {
					continue
				}
				for _, m := range pathTokenRE.FindAllStringSubmatch(span[1], -1) {
					p := m[1]
					if !top[strings.Split(p, "/")[0]] || pathExists(root, p) {
						continue
					}
					if sel := selectorRE.FindStringIndex(p); sel != nil && pathExists(root, p[:sel[0]]) {
						continue
					}
					t.Errorf("%s:%d: `%s` names %s, which does not exist", file, l.n, span[1], p)
				}
			}
		}
	}
}

// pathExists reports whether rel (slash-separated, relative to root)
// exists.
func pathExists(root, rel string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil
}
