// Package devtemporal runs a complete Temporal server inside the current
// process, persisted in SQLite. It is the default backend of `go run
// ./cmd/server` and of the integration tests: no Docker, no separate binary.
//
// The server has one history shard and the four Temporal services
// (frontend, history, matching, worker) on local ports. With a database file
// its state (namespaces, workflow histories, visibility) survives a restart of
// the process; with no file it lives in memory until the process exits.
//
// It is a development and test server. Production deployments point the
// adapter at a real Temporal cluster or Temporal Cloud instead (see
// docker-compose.yml and docs/operations.md).
package devtemporal
