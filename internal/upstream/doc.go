// Package upstream puts existing MCP servers behind the adapter: it reads
// the file of upstreams (OPENWOP_UPSTREAMS_FILE, docs/upstreams.md),
// connects to each upstream with the MCP Go SDK's client, and turns each
// of their tools into a tool of the workflows library, so that every call
// of it is a run whose activity calls the upstream tool.
//
// It is internal: the file is the interface users see, and the commands
// (cmd/server's in-process worker, cmd/worker) are its only callers. It
// must not depend on the Temporal server (go.temporal.io/server).
package upstream
