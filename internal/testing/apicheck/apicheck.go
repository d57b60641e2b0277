package apicheck

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Violation is one place where a package's exported API mentions a type
// declared in an internal package.
type Violation struct {
	// Path says how the type is reached from the package scope, e.g.
	// "mcpmount.Options.Keys" or "runs.Backend.Start(req)".
	Path string
	// Internal is the offending type as "import/path.Name".
	Internal string
}

// String formats the violation as "path -> import/path.Name".
func (v Violation) String() string { return v.Path + " -> " + v.Internal }

// Check walks the exported API of pkg and returns, sorted, every place
// where it mentions a named type whose package path satisfies isInternal.
//
// The API is every exported package-level object: functions (type
// parameter constraints, parameters and results), variables and constants
// (their types), and type names. For a named type declared in pkg the walk
// covers its type parameters, its exported methods and its underlying type:
// the exported fields of a struct (and the members promoted from unexported
// embedded fields), the exported and embedded methods of an interface, and
// the element, key, parameter and result types of any other type.
// Type arguments of instantiated generic types are always checked, whatever
// package the generic type comes from.
//
// The walk descends only into named types declared in pkg itself: exported
// ones as their own roots, unexported ones wherever an exported object
// exposes them. Named types of other packages are only tested with
// isInternal, never entered: those of other public packages of the module
// are covered when that package is checked, and third-party types are not
// this module's concern. Aliases are resolved, so re-exporting an internal
// type through an alias is still reported.
func Check(pkg *types.Package, isInternal func(pkgPath string) bool) []Violation {
	w := &walker{pkg: pkg, isInternal: isInternal}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		w.visited = make(map[*types.Named]bool)
		root := pkg.Name() + "." + name
		switch obj := obj.(type) {
		case *types.TypeName:
			w.typeName(root, obj)
		case *types.Func:
			w.signature(root, obj.Type().(*types.Signature))
		case *types.Var, *types.Const:
			w.typ(root, obj.Type())
		}
	}
	sort.Slice(w.found, func(i, j int) bool { return w.found[i].String() < w.found[j].String() })
	return w.found
}

// walker holds the state of one Check call.
type walker struct {
	pkg        *types.Package
	isInternal func(string) bool
	// visited holds the named types already entered from the current
	// root, which stops the walk on recursive types.
	visited map[*types.Named]bool
	found   []Violation
}

// typeName walks a package-level exported type name.
func (w *walker) typeName(path string, obj *types.TypeName) {
	switch t := obj.Type().(type) {
	case *types.Alias:
		w.typeParams(path, t.TypeParams())
		w.typ(path, t)
	case *types.Named:
		w.visited[t] = true
		w.named(path, t)
	}
}

// named walks the members of a named type declared in the walked package:
// its type parameters, its exported methods and its underlying type.
func (w *walker) named(path string, t *types.Named) {
	w.typeParams(path, t.TypeParams())
	for m := range t.Methods() {
		if m.Exported() {
			w.signature(path+"."+m.Name(), m.Type().(*types.Signature))
		}
	}
	w.typ(path, t.Underlying())
}

// typeParams walks the constraints of a type parameter list.
func (w *walker) typeParams(path string, tps *types.TypeParamList) {
	for tp := range tps.TypeParams() {
		w.typ(path+"["+tp.Obj().Name()+"]", tp.Constraint())
	}
}

// signature walks a function or method type.
func (w *walker) signature(path string, sig *types.Signature) {
	w.typeParams(path, sig.TypeParams())
	params := sig.Params()
	for i := range params.Len() {
		p := params.At(i)
		name := paramName(p, i)
		t := p.Type()
		if sig.Variadic() && i == params.Len()-1 {
			if s, ok := t.(*types.Slice); ok {
				name += "..."
				t = s.Elem()
			}
		}
		w.typ(path+"("+name+")", t)
	}
	results := sig.Results()
	for i := range results.Len() {
		w.typ(path+"() result "+paramName(results.At(i), i), results.At(i).Type())
	}
}

// paramName names a parameter or result for a path: its name, or its
// position as "#i" when it is unnamed or blank.
func paramName(v *types.Var, i int) string {
	if v.Name() == "" || v.Name() == "_" {
		return "#" + strconv.Itoa(i)
	}
	return v.Name()
}

// typ walks a type reached at path.
func (w *walker) typ(path string, t types.Type) {
	switch t := types.Unalias(t).(type) {
	case *types.Named:
		w.namedRef(path, t)
	case *types.Pointer:
		w.typ(path, t.Elem())
	case *types.Slice:
		w.typ(path+"[]", t.Elem())
	case *types.Array:
		w.typ(path+"[]", t.Elem())
	case *types.Map:
		w.typ(path+"[key]", t.Key())
		w.typ(path+"[value]", t.Elem())
	case *types.Chan:
		w.typ(path+"<-", t.Elem())
	case *types.Signature:
		w.signature(path, t)
	case *types.Struct:
		w.structFields(path, t)
	case *types.Interface:
		w.iface(path, t)
	case *types.Union:
		for term := range t.Terms() {
			w.typ(path, term.Type())
		}
	}
	// *types.Basic and *types.TypeParam mention no named type; a type
	// parameter's constraint is walked where the parameter is declared.
}

// namedRef handles a use of a named type: its type arguments are always
// walked; the type itself is reported when internal and entered only when
// it is an unexported type of the walked package (exported ones are roots
// of their own).
func (w *walker) namedRef(path string, t *types.Named) {
	args := t.TypeArgs()
	for i := range args.Len() {
		w.typ(path+"[type arg #"+strconv.Itoa(i)+"]", args.At(i))
	}
	obj := t.Obj()
	if obj.Pkg() == nil { // error, comparable
		return
	}
	if w.isInternal(obj.Pkg().Path()) {
		w.found = append(w.found, Violation{Path: path, Internal: obj.Pkg().Path() + "." + obj.Name()})
		return
	}
	if obj.Pkg() != w.pkg || obj.Exported() {
		return
	}
	origin := t.Origin()
	if w.visited[origin] {
		return
	}
	w.visited[origin] = true
	w.named(path, origin)
}

// structFields walks the exported fields of a struct and, through
// unexported embedded fields, the fields and methods they promote.
func (w *walker) structFields(path string, s *types.Struct) {
	for f := range s.Fields() {
		switch {
		case f.Exported():
			w.typ(path+"."+f.Name(), f.Type())
		case f.Embedded():
			// The field itself cannot be named outside the package, but
			// its exported fields and methods are promoted to path.
			w.typ(path, f.Type())
		}
	}
}

// iface walks the exported explicit methods and the embedded types of an
// interface (embedded interfaces, and union terms of constraints).
func (w *walker) iface(path string, it *types.Interface) {
	for m := range it.ExplicitMethods() {
		if m.Exported() {
			w.signature(path+"."+m.Name(), m.Type().(*types.Signature))
		}
	}
	for e := range it.EmbeddedTypes() {
		w.typ(path, e)
	}
}

// IsInternalPath reports whether pkgPath is an internal package of the
// module modulePath: the module itself or a package below it whose path
// has an element named "internal".
func IsInternalPath(modulePath, pkgPath string) bool {
	rel, ok := strings.CutPrefix(pkgPath, modulePath)
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return false
	}
	for _, elem := range strings.Split(rel, "/") {
		if elem == "internal" {
			return true
		}
	}
	return false
}

// ModuleRoot returns the directory of the go.mod file governing dir, as
// reported by `go env GOMOD`.
func ModuleRoot(dir string) (string, error) {
	out, err := goCommand(dir, "env", "GOMOD")
	if err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("find module root of %s: not inside a module (go env GOMOD = %q)", dir, gomod)
	}
	return filepath.Dir(gomod), nil
}

// listedPackage holds the `go list -json` fields the loader reads.
type listedPackage struct {
	ImportPath string
	Name       string
	Export     string
	GoFiles    []string
	CgoFiles   []string
	Module     *struct {
		Path string
		Main bool
	}
}

// PublicPackages is the result of LoadPublicPackages.
type PublicPackages struct {
	// ModulePath is the path of the module that was loaded.
	ModulePath string
	// Packages are the module's public non-main packages, type-checked
	// from export data, sorted by import path.
	Packages []*types.Package
}

// LoadPublicPackages lists the packages of the module rooted at root with
// `go list ./...` (which leaves out nested modules), keeps those that are
// neither internal, nor main, nor test-only, of the main module, builds
// export data for them and their dependencies with `go list -export -deps`
// and imports them with the gc export-data importer.
func LoadPublicPackages(root string) (*PublicPackages, error) {
	listed, err := goList(root, "-json=ImportPath,Name,GoFiles,CgoFiles,Module", "./...")
	if err != nil {
		return nil, err
	}
	result := &PublicPackages{}
	var paths []string
	for _, p := range listed {
		if p.Module == nil || !p.Module.Main {
			continue
		}
		result.ModulePath = cmp.Or(result.ModulePath, p.Module.Path)
		if p.Name == "main" || len(p.GoFiles)+len(p.CgoFiles) == 0 || IsInternalPath(p.Module.Path, p.ImportPath) {
			continue
		}
		paths = append(paths, p.ImportPath)
	}
	if len(paths) == 0 {
		return result, nil
	}
	sort.Strings(paths)

	deps, err := goList(root, append([]string{"-export", "-deps", "-json=ImportPath,Export"}, paths...)...)
	if err != nil {
		return nil, err
	}
	exports := make(map[string]string, len(deps))
	for _, p := range deps {
		exports[p.ImportPath] = p.Export
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file := exports[path]
		if file == "" {
			return nil, fmt.Errorf("no export data for %q in go list -export output", path)
		}
		return os.Open(file)
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", lookup)
	for _, path := range paths {
		pkg, err := imp.Import(path)
		if err != nil {
			return nil, fmt.Errorf("import %s from export data: %w", path, err)
		}
		result.Packages = append(result.Packages, pkg)
	}
	return result, nil
}

// goList runs `go list args...` in dir and decodes its stream of JSON
// package objects.
func goList(dir string, args ...string) ([]listedPackage, error) {
	out, err := goCommand(dir, append([]string{"list"}, args...)...)
	if err != nil {
		return nil, err
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// goCommand runs the go command in dir and returns its standard output;
// on failure the error carries the command line and its standard error.
func goCommand(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
