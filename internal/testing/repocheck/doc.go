// Package repocheck holds tests of the repository as a whole rather than of
// one package: what may be tracked (source, docs and small fixtures, never
// a built binary or a file over 2 MiB) and how the packages are layered
// (no import from a lower layer into a higher one, none from a public
// package into internal/ but the leaf libraries named in layers.go).
//
// It has no API; docs/architecture.md describes the layers it enforces.
package repocheck
