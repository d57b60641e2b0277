package catalog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
)

// TestDeclaredRunTimeout: a declaration's runTimeout is read as a Go
// duration string and checked (positive, at most MaxRunTimeout); a bad one
// refuses the file with an error naming the file, the tool and the value.
func TestDeclaredRunTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		value   string // the JSON value of runTimeout
		want    time.Duration
		problem string // what the error says; "" for none
	}{
		{"minutes", `"90m"`, 90 * time.Minute, ""},
		{"seconds", `"2s"`, 2 * time.Second, ""},
		{"negative", `"-5s"`, 0, "run timeout -5s is negative"},
		{"too long", `"9000h"`, 0, "longer than the maximum 8784h0m0s"},
		{"not a duration", `"soon"`, 0, `duration "soon"`},
		{"a number", `30`, 0, `a duration is a string such as "90s"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tools.json")
			decl := `[{"name":"report","description":"Builds a report.","taskQueue":"reports","contract":"plain","runTimeout":` + tc.value + `}]`
			if err := os.WriteFile(path, []byte(decl), 0o600); err != nil {
				t.Fatal(err)
			}
			specs, err := catalog.LoadDeclarations(path)
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) || !strings.Contains(err.Error(), path) {
					t.Fatalf("LoadDeclarations = %v, want an error naming %s and %q", err, path, tc.problem)
				}
				return
			}
			if err != nil || len(specs) != 1 || time.Duration(specs[0].RunTimeout) != tc.want {
				t.Fatalf("LoadDeclarations = %+v, %v; want runTimeout %s", specs, err, tc.want)
			}
		})
	}
}

// TestCompileRunTimeout: Compile checks a spec's run timeout whatever its
// source (a publication, a Go tool), naming the tool.
func TestCompileRunTimeout(t *testing.T) {
	for _, tc := range []struct {
		d       time.Duration
		problem string
	}{
		{0, ""},
		{time.Hour, ""},
		{catalog.MaxRunTimeout, ""},
		{-time.Second, "tool t: run timeout -1s is negative"},
		{catalog.MaxRunTimeout + time.Second, "tool t: run timeout 8784h0m1s is longer than the maximum"},
	} {
		_, err := catalog.Compile(signals.ToolSpec{Name: "t", Description: "d", RunTimeout: signals.Duration(tc.d)})
		if (tc.problem == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.problem) {
			t.Errorf("Compile with run timeout %s = %v, want %q", tc.d, err, tc.problem)
		}
	}
}

// TestDeclaredRunTimeoutNull: "runTimeout": null declares none, as an
// absent field does.
func TestDeclaredRunTimeoutNull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tools.json")
	decl := `[{"name":"report","description":"Builds a report.","taskQueue":"reports","contract":"plain","runTimeout":null}]`
	if err := os.WriteFile(path, []byte(decl), 0o600); err != nil {
		t.Fatal(err)
	}
	specs, err := catalog.LoadDeclarations(path)
	if err != nil || len(specs) != 1 || specs[0].RunTimeout != 0 {
		t.Fatalf("LoadDeclarations = %+v, %v; want no run timeout", specs, err)
	}
}
