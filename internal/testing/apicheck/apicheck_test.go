package apicheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestPublicAPIHasNoInternalTypes checks every public package of this
// module: its exported API must not mention a type from one of the
// module's internal packages, which callers outside the module cannot name.
func TestPublicAPIHasNoInternalTypes(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("working directory: %v", err)
	}
	root, err := ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadPublicPackages(root)
	if err != nil {
		t.Fatalf("cannot load the module's public packages (does the tree build?): %v", err)
	}
	if len(loaded.Packages) == 0 {
		t.Fatalf("no public packages found in module %s at %s", loaded.ModulePath, root)
	}
	isInternal := func(pkgPath string) bool { return IsInternalPath(loaded.ModulePath, pkgPath) }
	var violations []string
	for _, pkg := range loaded.Packages {
		t.Logf("checking %s", pkg.Path())
		for _, v := range Check(pkg, isInternal) {
			violations = append(violations, v.String())
		}
	}
	slices.Sort(violations)
	if len(violations) > 0 {
		t.Errorf("the exported API of %d public package(s) mentions %d type(s) from internal packages of %s:\n\t%s",
			len(loaded.Packages), len(violations), loaded.ModulePath, strings.Join(violations, "\n\t"))
	}
}

// testModule is the module path the walker tests pretend to be in.
const testModule = "github.com/openwop/temporal-mcp"

// fakeSources are the packages the fake importer serves: an internal
// package of the module and a third-party package whose types the walker
// must not enter.
var fakeSources = map[string]string{
	testModule + "/internal/x": `package x
type T struct{}
type I interface{ M() }
type Mode int
type G[P any] struct{ V P }
`,
	"example.com/other": `package other
import "` + testModule + `/internal/x"
type Box[E any] struct{ V E }
type Opaque struct{ Hidden x.T }
`,
}

// fakeImporter type-checks fakeSources on demand.
type fakeImporter struct {
	fset *token.FileSet
	pkgs map[string]*types.Package
}

// Import implements types.Importer.
func (imp *fakeImporter) Import(path string) (*types.Package, error) {
	if pkg, ok := imp.pkgs[path]; ok {
		return pkg, nil
	}
	src, ok := fakeSources[path]
	if !ok {
		return nil, fmt.Errorf("fake importer: unknown package %q", path)
	}
	pkg, err := typeCheck(imp, path, src)
	if err != nil {
		return nil, err
	}
	imp.pkgs[path] = pkg
	return pkg, nil
}

// typeCheck parses and type-checks one in-memory source file as the
// package at path.
func typeCheck(imp *fakeImporter, path, src string) (*types.Package, error) {
	f, err := parser.ParseFile(imp.fset, path+"/src.go", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check(path, imp.fset, []*ast.File{f}, nil)
	if err != nil {
		return nil, fmt.Errorf("type-check %s: %w", path, err)
	}
	return pkg, nil
}

// TestCheck proves the walker finds internal types wherever the exported
// API can expose them, and ignores what callers cannot reach.
func TestCheck(t *testing.T) {
	const xT = testModule + "/internal/x.T"
	tests := []struct {
		name string
		src  string // declarations of package p, which imports x and other
		want []string
	}{
		{
			name: "function parameter",
			src:  `func F(t x.T) {}`,
			want: []string{"p.F(t) -> " + xT},
		},
		{
			name: "unnamed function result",
			src:  `func F() (*x.T, error) { return nil, nil }`,
			want: []string{"p.F() result #0 -> " + xT},
		},
		{
			name: "variadic parameter",
			src:  `func F(ts ...x.T) {}`,
			want: []string{"p.F(ts...) -> " + xT},
		},
		{
			name: "type parameter constraint",
			src:  `func F[P x.I]() {}`,
			want: []string{"p.F[P] -> " + testModule + "/internal/x.I"},
		},
		{
			name: "exported struct field",
			src:  `type S struct{ F x.T }`,
			want: []string{"p.S.F -> " + xT},
		},
		{
			name: "unexported struct field is not reported",
			src:  `type S struct{ f x.T }`,
		},
		{
			name: "unexported function is not reported",
			src:  `func f(x.T) {}`,
		},
		{
			name: "unexported variable is not reported",
			src:  `var v x.T`,
		},
		{
			name: "interface method result",
			src:  `type I interface{ M() x.T }`,
			want: []string{"p.I.M() result #0 -> " + xT},
		},
		{
			name: "unexported interface method is not reported",
			src:  `type I interface{ m() x.T }`,
		},
		{
			name: "embedded internal interface",
			src:  `type I interface{ x.I }`,
			want: []string{"p.I -> " + testModule + "/internal/x.I"},
		},
		{
			name: "type argument through an alias",
			src: `type G[P any] struct{}
type A = G[x.T]`,
			want: []string{"p.A[type arg #0] -> " + xT},
		},
		{
			name: "type argument of a variable",
			src: `type G[P any] struct{}
var V G[x.T]`,
			want: []string{"p.V[type arg #0] -> " + xT},
		},
		{
			name: "instantiated internal generic",
			src:  `var V x.G[int]`,
			want: []string{"p.V -> " + testModule + "/internal/x.G"},
		},
		{
			name: "methods on T and *T of an exported type",
			src: `type S struct{}
func (S) M(t x.T) {}
func (*S) N() []x.T { return nil }
func (S) m(t x.T) {}`,
			want: []string{"p.S.M(t) -> " + xT, "p.S.N() result #0[] -> " + xT},
		},
		{
			name: "methods of an unexported type nothing exposes are not reported",
			src: `type hidden struct{ F x.T }
func (hidden) M(t x.T) {}`,
		},
		{
			name: "pointer, slice, array, map and chan elements",
			src: `var P *x.T
var L []x.T
var A [2]x.T
var MK map[x.T]int
var MV map[string]*x.T
var C chan x.T`,
			want: []string{
				"p.A[] -> " + xT,
				"p.C<- -> " + xT,
				"p.L[] -> " + xT,
				"p.MK[key] -> " + xT,
				"p.MV[value] -> " + xT,
				"p.P -> " + xT,
			},
		},
		{
			name: "function-typed field",
			src:  `type S struct{ Hook func(x.T) error }`,
			want: []string{"p.S.Hook(#0) -> " + xT},
		},
		{
			name: "underlying type of an exported named type",
			src:  `type M map[string]x.T`,
			want: []string{"p.M[value] -> " + xT},
		},
		{
			name: "constant of internal type",
			src:  `const C = x.Mode(1)`,
			want: []string{"p.C -> " + testModule + "/internal/x.Mode"},
		},
		{
			name: "alias of an internal type",
			src:  `type A = x.T`,
			want: []string{"p.A -> " + xT},
		},
		{
			name: "unexported type exposed by an exported function",
			src: `type impl struct{ F x.T; g x.T }
func (impl) M() x.T { return x.T{} }
func New() *impl { return nil }`,
			want: []string{"p.New() result #0.F -> " + xT, "p.New() result #0.M() result #0 -> " + xT},
		},
		{
			name: "members promoted from an unexported embedded field",
			src: `type inner struct{ F x.T }
func (*inner) M(t x.T) {}
type S struct{ *inner }`,
			want: []string{"p.S.F -> " + xT, "p.S.M(t) -> " + xT},
		},
		{
			name: "exported type reached from another root is reported once, at its own root",
			src: `type S struct{ F x.T }
func Use(s S) {}
var V []S`,
			want: []string{"p.S.F -> " + xT},
		},
		{
			name: "recursive types terminate",
			src: `type Node struct{ Next *Node; Kids []*Node }
type node struct{ Next *node; V x.T }
func Root() *node { return nil }`,
			want: []string{"p.Root() result #0.V -> " + xT},
		},
		{
			name: "third-party types are not entered, but their type arguments are checked",
			src: `var O other.Opaque
var B other.Box[x.T]`,
			want: []string{"p.B[type arg #0] -> " + xT},
		},
		{
			name: "anonymous struct and interface types",
			src:  `var V struct{ F interface{ M(x.T) } }`,
			want: []string{"p.V.F.M(#0) -> " + xT},
		},
		{
			name: "clean package",
			src: `type S struct{ Name string }
func New(name string) *S { return &S{Name: name} }`,
		},
	}
	isInternal := func(pkgPath string) bool { return IsInternalPath(testModule, pkgPath) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			imp := &fakeImporter{fset: token.NewFileSet(), pkgs: make(map[string]*types.Package)}
			src := `package p
import (
	"` + testModule + `/internal/x"
	"example.com/other"
)
var _ x.T
var _ other.Opaque
` + tt.src
			pkg, err := typeCheck(imp, testModule+"/p", src)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range Check(pkg, isInternal) {
				got = append(got, v.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Check reported\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

// TestIsInternalPath pins which import paths count as internal packages
// of the module.
func TestIsInternalPath(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{testModule + "/internal/auth", true},
		{testModule + "/internal", true},
		{testModule + "/mcpmount/internal/state", true},
		{testModule + "/mcpmount", false},
		{testModule, false},
		{testModule + "/internalish", false},
		{testModule + "-fork/internal/auth", false},
		{"go.temporal.io/sdk/internal", false},
	}
	for _, tt := range tests {
		if got := IsInternalPath(testModule, tt.path); got != tt.want {
			t.Errorf("IsInternalPath(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
