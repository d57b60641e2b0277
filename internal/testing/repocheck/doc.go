// Package repocheck holds tests of the repository as a whole rather than of
// one package: what may be tracked (source, docs and small fixtures, never
// a built binary or a file over 2 MiB); how the packages are layered (no
// import from a lower layer into a higher one, none from a public package
// into internal/ but the leaf libraries named in layers.go, none from an
// author library into the run service or a protocol edge); how long a
// production function may be; and that the documentation holds (README.md
// stays a front door whose Go code is the code of an example the
// end-to-end tests build, its other blocks parse, and every path, relative
// link and heading that README.md and docs/ name, every page the code
// names, and every Go file a comment names, exists); and that
// staticcheck.conf keeps the doc-comment checks on.
//
// It has no API; docs/architecture.md describes the layers it enforces and
// docs/testing.md the checks.
package repocheck
