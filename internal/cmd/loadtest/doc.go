// Command loadtest is the fault and load harness of the split deployment.
// By default it is three processes: the Temporal dev server
// (internal/cmd/devserver, on a SQLite file), cmd/worker and cmd/server
// (TEMPORAL_ADDRESS set, OPENWOP_WORKER=off).
//
// With -persistence postgres it starts PostgreSQL in a temporary directory
// (internal/testing/pgtest) and Temporal on it with SQL visibility; with
// -temporal-nodes N, N Temporal processes form one cluster on loopback
// (membership through the database), which the other processes reach
// through a TCP balancer of the harness; with -replicas N, N mount-only
// server replicas (one data directory, so one journal, each) sit behind
// an HTTP load balancer of the harness (round-robin, sticky by
// Mcp-Session-Id only for session-era clients), served by as many workers
// (-workers). That is the production shape docs/scale.md describes.
//
// It runs N MCP clients, each doing full lifecycles of the confirm_delete
// tool as a task (tools/call → tasks/get until input_required →
// tasks/update accept → tasks/get until completed), for a bounded time,
// and kills -9 and restarts the first server, worker and Temporal node
// (and, with PostgreSQL, crashes and restarts PostgreSQL) one at a time,
// spread evenly over the load. Then every client finishes the lifecycle it
// is in, and the harness audits Temporal's visibility against what the
// clients hold:
//
//   - lost: a run a client holds that does not exist or did not finish;
//   - duplicated: a client intent (one filename) with more than one run
//     that completed;
//   - orphaned: a run no client holds that was not cancelled;
//
// and reports them with p50/p99 request latency, 5xx answers and transport
// errors. It exits 1 when a target is missed (0 lost, duplicated, orphaned,
// 5xx, unfinished). It is not part of the test suite; see
// docs/reliability.md and docs/scale.md for the commands and the figures.
//
//	go run ./internal/cmd/loadtest -clients 200 -duration 60s
//	go run ./internal/cmd/loadtest -persistence postgres -temporal-nodes 2 -replicas 2 -clients 50 -duration 60s
package main
