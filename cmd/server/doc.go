// Command server runs the OpenWOP Temporal MCP adapter.
//
// With no TEMPORAL_ADDRESS (nor TEMPORAL_PROFILE / TEMPORAL_CONFIG_FILE) it
// runs everything in one process: an embedded Temporal server persisted in
// ./data/temporal.db, the Temporal Web UI on 127.0.0.1:8233, a worker for
// the example tool workflows and the HTTP listener on 127.0.0.1:8080. With
// TEMPORAL_ADDRESS set it embeds nothing and connects there (still running
// its worker unless OPENWOP_WORKER=off).
//
// The tools it serves are the catalog in Temporal: what live workers
// published (its own in-process worker included) plus the tools declared in
// OPENWOP_TOOLS_FILE. Every setting is checked before anything starts: an
// invalid one is one line on stderr naming the variable, and exit status 1.
// Run with -h for the flags and variables; docs/configuration.md
// describes them all.
//
// `server versions ...` runs an operator command instead of the server:
// describe a Worker Deployment's versions, make one current, ramp one, move
// the runs pinned to a build whose workers are gone to the current version
// (internal/app/operator, docs/upgrades.md).
package main
