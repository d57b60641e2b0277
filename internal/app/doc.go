// Package app assembles the process cmd/server runs: the Temporal
// connection (a remote server, or the embedded devtemporal server), the
// run search attributes, the in-process worker and the HTTP listener with
// GET /healthz. The listener has connection limits (Limits: a read timeout
// for requests, an idle timeout, a bound on open connections) that never
// cut a long response. The configuration, the logger and the Temporal dial are
// internal/app/config's, which cmd/worker shares; this package is the part that
// embeds the Temporal server and so stays out of the worker binary.
//
// The embedded server's data directory is locked (internal/app/datadir): a
// second process on it fails naming the holder, or, with
// Config.ShareDataDir (cmd/server -stdio), uses the holder's server and
// runs the server itself once the holder exits. Two processes never open
// one SQLite file.
//
// The caller supplies what is specific to the adapter through Parts: the
// HTTP handler (the MCP mount, discovery, REST) and the worker, built from
// Deps once Temporal is connected.
package app
