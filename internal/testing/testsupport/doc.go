// Package testsupport holds the small helpers the tests of several packages
// share: a free loopback port, the run id of an MCP task id, and the checks
// of a run's event log. It needs no Temporal server (package testenv gives
// tests one) and links nothing heavy, so any test may import it.
package testsupport
