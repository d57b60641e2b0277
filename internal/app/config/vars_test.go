package config

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// docsTableNames returns the variables that the table of
// docs/configuration.md's "Variables" section names (the backquoted names
// of each row's first cell), without the rows whose meaning starts "Tests
// only:" (variables of the tests, not of the commands).
func docsTableNames(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	var names []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Variables"
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(line, "|")
			if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[3]), "Tests only:") {
				continue
			}
			for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
				names = append(names, m[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("docs/configuration.md: no table of variables under ## Variables")
	}
	return names
}

// TestDocsListEveryVariable: docs/configuration.md's table of variables
// and Vars name the same variables. A name of Vars ending in "*" stands
// for the documented variables it starts.
func TestDocsListEveryVariable(t *testing.T) {
	documented := docsTableNames(t)
	var declared []string
	for _, v := range Vars() {
		declared = append(declared, v.Names...)
	}
	matches := func(pattern, name string) bool {
		if p, ok := strings.CutSuffix(pattern, "*"); ok {
			return strings.HasPrefix(name, p)
		}
		return pattern == name
	}
	for _, d := range declared {
		if !slices.ContainsFunc(documented, func(name string) bool { return matches(d, name) }) {
			t.Errorf("%s is declared in Vars but not documented in docs/configuration.md's table of variables", d)
		}
	}
	for _, name := range documented {
		if !slices.ContainsFunc(declared, func(d string) bool { return matches(d, name) }) {
			t.Errorf("%s is documented in docs/configuration.md but not declared in Vars", name)
		}
	}
}

// recordingEnv is an empty environment that records the variables looked
// up.
type recordingEnv struct {
	mu    sync.Mutex
	names map[string]bool
}

func (e *recordingEnv) Environ() []string { return nil }

func (e *recordingEnv) LookupEnv(name string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.names[name] = true
	return "", false
}

// TestEveryVariableReadIsDeclared: every OPENWOP_* variable LoadServer
// reads is declared in Vars, with a Scope that reaches it, and every
// declared OPENWOP_* variable is read.
func TestEveryVariableReadIsDeclared(t *testing.T) {
	declared := map[string]Scope{}
	for _, v := range Vars() {
		for _, name := range v.Names {
			declared[name] = v.Scope
		}
	}
	tests := []struct {
		name  string
		load  func(*recordingEnv) error
		scope func(Scope) bool
	}{
		{"LoadServer", func(e *recordingEnv) error { _, err := LoadServer(e, false); return err }, func(Scope) bool { return true }},
		{"LoadConfig", func(e *recordingEnv) error { _, err := LoadConfig(e); return err }, func(s Scope) bool { return s != ServerOnly }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := &recordingEnv{names: map[string]bool{}}
			if err := tt.load(env); err != nil {
				t.Fatal(err)
			}
			for name := range env.names {
				if s, ok := declared[name]; strings.HasPrefix(name, "OPENWOP_") && (!ok || !tt.scope(s)) {
					t.Errorf("%s reads %s, which Vars does not declare for it", tt.name, name)
				}
			}
			for name, s := range declared {
				if strings.HasPrefix(name, "OPENWOP_") && tt.scope(s) && !env.names[name] {
					t.Errorf("%s is declared in Vars but %s does not read it", name, tt.name)
				}
			}
		})
	}
}
