// Package conformancetools holds the conformance fixtures: the tools the
// MCP conformance suite, the OpenWOP conformance suite, the client matrix
// and this module's integration tests call (greet, slow_compute,
// confirm_delete, conformance-approval, ...). They are test tools, not
// examples of how to write one (package examples/tools is that).
//
// The stock commands (cmd/server's in-process worker and cmd/worker) serve
// them beside the example tools when OPENWOP_FIXTURES=on, through
// Registry; by default they serve the example tools alone. The fixtures'
// names and behaviour are fixed: the suites and the recorded histories
// (testdata/histories, replayed by TestReplayHistories; docs/upgrades.md)
// depend on them.
package conformancetools
