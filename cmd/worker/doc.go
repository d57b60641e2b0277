// Command worker runs only a worker of the example tool workflows and
// activities, and publishes its tools to the catalog in Temporal, where any
// cmd/server reading that namespace finds them. With
// OPENWOP_UPSTREAMS_FILE it also serves the tools of existing MCP servers,
// each call a run (docs/upstreams.md).
//
// It connects by the standard Temporal environment (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE,
// TEMPORAL_CONFIG_FILE), loaded exactly as cmd/server loads it
// (internal/app/config): a Temporal CLI TOML file is read only when
// TEMPORAL_PROFILE or TEMPORAL_CONFIG_FILE is set. With none set it dials
// localhost:7233, where `go run ./cmd/server` embeds its Temporal server.
// An invalid setting is one line on stderr naming the variable, and exit
// status 1. TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID, both
// set, make it that build of a Temporal Worker Deployment, its tools'
// runs pinned to it (docs/upgrades.md). It does not link the Temporal
// server (scripts/test.sh checks it). Run with -h for the variables.
package main
