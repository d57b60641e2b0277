// Package apicheck guards the module's public API against leaking types
// from its internal packages.
//
// A type declared under an internal/ directory cannot be named by code
// outside this module, so an exported function, field, method or variable
// of a public package whose signature mentions one is unusable (or at least
// unnameable) for callers. The test in this package lists every public,
// non-main package of the module with the go command, type-checks it from
// compiler export data, walks its exported API with go/types and fails,
// listing every leak as
//
//	pkg.Name: path -> internal type
//
// The walker (Check) is exported so the rule can be exercised on small
// in-memory packages; the loader (LoadPublicPackages) drives the go command.
package apicheck
