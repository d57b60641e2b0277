// Package e2e holds end-to-end tests that run the built commands as a user
// does: the stock cmd/server on its embedded Temporal, and workers built
// from other modules (examples/) with only the public packages.
package e2e
