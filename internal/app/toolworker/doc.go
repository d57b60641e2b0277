// Package toolworker runs the stock commands' worker of the example tools
// (examples/tools, and with OPENWOP_FIXTURES=on the conformance fixtures of
// internal/testing/conformancetools; with OPENWOP_UPSTREAMS_FILE, the
// tools of upstream MCP servers, internal/upstream): the registry both
// commands build from the configuration, the in-process worker cmd/server
// runs on it, and the whole process cmd/worker is (telemetry, metrics, the
// Temporal dial, the run search attributes, the worker).
//
// It must not depend on the Temporal server (go.temporal.io/server), nor on
// package internal/app, which embeds one: cmd/worker is built from it
// (scripts/test.sh checks the worker binary).
package toolworker
