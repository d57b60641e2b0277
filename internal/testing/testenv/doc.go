// Package testenv gives integration tests a real Temporal server: the
// embedded devtemporal server on in-memory SQLite, started once per test
// binary and shared by its tests, plus private file-backed servers for
// tests that stop and restart Temporal.
//
// Typical use:
//
//	env := testenv.Temporal(t)
//	tq := testenv.UniqueTaskQueue(t)
//	env.NewWorker(t, tq, func(r worker.Registry) { r.RegisterWorkflow(MyTool) })
//	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: tq}, MyTool, in)
//
// Tests sharing the server isolate themselves with unique task queues and
// workflow IDs. Server and SDK logs go to stderr at warn level; set
// OPENWOP_TEST_LOG=debug (or info) to see more. OPENWOP_TEST_PERSISTENCE=postgres
// puts the shared server on PostgreSQL with SQL visibility (internal/testing/pgtest
// starts one) instead of in-memory SQLite.
package testenv
