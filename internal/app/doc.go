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
// What is specific to the adapter comes in through Parts: the HTTP handler
// (the MCP mount, discovery, REST) and the worker, built from Deps once
// Temporal is connected. Server supplies them for cmd/server: the catalog,
// the run service, the mount and the REST API on one mux, and the worker of
// the example tools (internal/app/toolworker). Main is the whole command:
// its settings, checked before anything starts, then App with Server's
// Parts, over HTTP or (-stdio) with one client on stdin/stdout.
//
// Files: app.go is the process lifecycle (Start, Run, Shutdown), parts.go
// what the caller supplies (Parts, Deps), embedded.go the embedded server
// and the shared data directory, health.go GET /healthz, limits.go the
// listener's limits, server.go the adapter's parts, nexus.go the tools'
// Nexus service the in-process worker serves with ServerOptions.Nexus
// (package nexusfront) and command.go cmd/server's settings and -stdio.
package app
