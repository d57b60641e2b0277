// Package devtemporal runs a complete Temporal server inside the current
// process, persisted in SQLite. It is the default backend of `go run
// ./cmd/server` and of the integration tests: no Docker, no separate binary.
//
// The server has one history shard and the four Temporal services
// (frontend, history, matching, worker) on local ports. With a database file
// its state (namespaces, workflow histories, visibility) survives a restart of
// the process; a new database keeps its visibility in a second file beside
// it (VisibilityFile), written on a connection of its own. With no file it
// lives in memory until the process exits.
//
// Options.Postgres persists it in PostgreSQL with SQL visibility instead
// (the databases and their schemas are created when missing), and
// Options.ClusterNode makes it one node of a cluster of several processes
// on that database, as production clusters run: the PostgreSQL-backed tests
// and the load harness (internal/cmd/loadtest) use them.
//
// It is a development and test server. Production deployments point the
// adapter at a real Temporal cluster or Temporal Cloud instead (see
// docker-compose.yml and docs/operations.md).
package devtemporal
