// Command loadtest is the fault and load harness of the split deployment:
// three processes, the Temporal dev server (internal/cmd/devserver, on a
// SQLite file), cmd/worker and cmd/server (TEMPORAL_ADDRESS set,
// OPENWOP_WORKER=off). It runs N MCP clients, each doing full lifecycles of
// the confirm_delete tool as a task (tools/call → tasks/get until
// input_required → tasks/update accept → tasks/get until completed), for a
// bounded time, and kills -9 and restarts the server, the worker and the
// Temporal server while they run (at 1/4, 2/4 and 3/4 of the load). Then
// every client finishes the lifecycle it is in, and the harness audits
// Temporal's visibility against what the clients hold:
//
//   - lost: a run a client holds that does not exist or did not finish;
//   - duplicated: a client intent (one filename) with more than one run
//     that completed;
//   - orphaned: a run no client holds that was not cancelled;
//
// and reports them with p50/p99 request latency, 5xx answers and transport
// errors. It exits 1 when a target is missed (0 lost, duplicated, orphaned,
// 5xx, unfinished). It is not part of the test suite; see
// docs/reliability.md for the command and the figures.
//
//	go run ./internal/cmd/loadtest -clients 200 -duration 60s
package main
