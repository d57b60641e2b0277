// Package bench measures the MCP mount against the raw Temporal Go SDK on
// the embedded stack (issue 11): every operation of the mount, served over
// real HTTP from httptest, side by side with the SDK calls a program would
// make for the same thing, on the same embedded server and the same
// workflow type, interleaved sample by sample.
//
// It runs in the processes a deployment has. The benchmark's own process
// is the server: the embedded Temporal server, the in-process worker and
// the mounts on one Temporal client, as cmd/server runs them. The clients
// run in a second process (the test binary again, TestBenchClientChild):
// the MCP client over HTTP, and the raw SDK program on a Temporal client
// of its own, as an MCP client and an SDK program are processes of their
// own. The Temporal calls of each side are counted where they are made.
//
// It is a benchmark, not a test: nothing here asserts a timing. Run it with
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./internal/testing/bench
//
// It prints one table with the median and p90 of each side, their ratios,
// the Temporal calls each side made, and PASS or MISS against the issue's
// target on every row. The tasks/get row of a working run has a third
// side, interleaved with the other two: the same read over a mount with
// tracing on (an SDK tracer provider, a traced client and worker), next to
// the stock mount's tracing off, both against the same raw query.
// Environment variables scale it:
//
//	OPENWOP_BENCH_N        samples per latency row (default 100)
//	OPENWOP_BENCH_SECONDS  seconds per throughput block (default 3; eight
//	                       blocks per concurrency level, raw and mount
//	                       alternating ABBA BAAB)
//	OPENWOP_BENCH_PACED    seconds measured per level of the paced rows,
//	                       after a warm-up of 5 s at 50 clients and 10 s
//	                       at 200 (default 20; 0 skips them)
//	OPENWOP_BENCH_ONLY     "paced": only the paced rows (to profile them);
//	                       "short": only the short-call row; "pace":
//	                       only the long-run row (poll interval)
//	OPENWOP_BENCH_PREOPEN  with OPENWOP_BENCH_ONLY=paced, waiting runs
//	                       opened before the paced rows (as the earlier
//	                       rows leave them)
//	OPENWOP_BENCH_MAXCALLS runs.Options.MaxTemporalCalls of the stack's
//	                       run services (0: the default)
//	OPENWOP_BENCH_OPEN     open tasks of the memory row (default 10000;
//	                       0 skips it)
//	OPENWOP_BENCH_EXTERNAL 0 skips the external mode
//	OPENWOP_BENCH_EXT_OPEN open tasks of the external mode's RSS rows
//	                       (default 10000,100000)
//	OPENWOP_BENCH_IDLE     seconds idle before the RSS after the load
//	                       (default 60)
//	OPENWOP_BENCH_BIN      a directory with the devserver, server and
//	                       server-mountonly binaries (default: built)
//
// The external mode (issue 21; BenchmarkExternal runs it alone) runs
// Temporal (the devserver command), the tools' worker and the mount-only
// server (cmd/server built with -tags mountonly, TEMPORAL_ADDRESS set,
// OPENWOP_WORKER=off) as processes of their own, from a child process that
// runs the raw SDK side: a blocking tools/call of a plain workflow against
// ExecuteWorkflow + Get (latency, and the server process's CPU time per
// call against the raw program's, both read from the kernel's process CPU
// clocks), the CPU time per lifecycle, the mount-only RSS idle (beside the
// stock build's), at many open tasks and after the load.
//
// The memory row runs in a child process (the test binary again), so that
// its RSS is that of a fresh embedded-default process: file-backed SQLite,
// the in-process worker with the workflow cache the stock server sets.
package bench
