// Package mcpcall lets workflow code call the tools of MCP servers
// durably: this server's tools or any other's, over streamable HTTP or
// stdio.
//
// The workflow side is ListTools and CallTool, deterministic functions a
// workflow calls; the worker side is Activities, which holds how each
// server is reached (its URL and headers with credentials, or its
// command) under a name the workflow uses, so that no secret enters
// history. Register the activities with the tools that call
// (workflows.NewRegistry(tools, acts)) or on a hand-built worker
// (Activities.Register).
//
// CallTool sends the tools/call in one activity. Its params._meta carries
// an idempotency key (MetaIdempotencyKey) derived from the workflow's run
// id and the activity's id, the same in every attempt of it: the
// temporal-mcp server starts at most one run per key, so a retried
// attempt (a lost answer, a worker killed mid-call) answers the run the
// first one started. MCP defines no such key; other servers ignore it and
// may then do a retried call twice.
//
// A server that speaks 2026-07-28 with the Tasks extension
// (io.modelcontextprotocol/tasks) may answer the call with a task. The
// task is then in history (the activity's result) and CallTool follows
// it: a workflow timer waits the task's pollIntervalMs, a short activity
// sends tasks/get, and so on until the task ends, so no connection is
// held for the length of the work and a worker restart loses nothing. A
// completed task's result is the call's result; a failed task is an
// error wrapping the server's *RPCError.
//
// A question the tool asks (status input_required with inputRequests, or
// an input_required answer to the call itself) goes to Options.Answer;
// by default AskHuman puts it to the calling run's own human through
// package workflows, with the inner question's message and schema, so a
// person answers the inner tool through the outer run. The answers go
// back with tasks/update (or, for the call's own questions, its retry
// with inputResponses). Cancelling the calling workflow, and any error
// once a task exists, sends tasks/cancel (on a disconnected context)
// before CallTool returns.
//
// A 2025-11-25 server that declares tasks for tools/call is asked for a
// task (params.task), followed the same way: tasks/get, then tasks/result
// once it has ended, tasks/cancel; each activity opens a session of its
// own. Such a task's questions ride a tasks/result stream no durable
// caller can hold, so a task that asks fails the call and is cancelled.
// Any other server (and a command) is called with the go-sdk client: the
// result comes in the activity, which heartbeats (the server's progress
// notifications too) for as long as the call takes.
//
// Package mcpcalltest is a fake server for tests: scripted results,
// questions, progress and failures, with the workflow's timers skipped by
// the SDK's test environment (workflowstest runs a tool that calls).
// docs/calling-tools.md describes the package with its guarantees.
package mcpcall
