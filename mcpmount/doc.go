// Package mcpmount serves the tool registry to MCP clients over streamable
// HTTP at one endpoint (and over stdio): MCP 2026-07-28 with the Tasks
// extension (io.modelcontextprotocol/tasks, revision 2026-07-28), where a
// task is a run and every task operation is a run operation of the run
// service (runs.Backend), and the session dialect (2025-06-18, 2025-11-25 and
// before) with elicitation and the 2025-11-25 task methods, on the same
// runs.
//
// # Where a request goes
//
// This package is the assembly (Options, New) and the HTTP intake; each
// part behind it is a package of its own under internal/, and no dialect
// imports another.
//
//   - http.go: ServeHTTP. Every request passes the same checks (Host and
//     Origin, credential, content type, body, the one decode of the body,
//     the 2026-07-28 header and _meta checks, a tool's scopes), then goes
//     to its dialect.
//   - internal/modern: the modern dialect (2026-07-28), over HTTP and
//     stdio. It answers every method of it itself (server/discover,
//     tools/list, tools/call, tasks/get|update|cancel,
//     subscriptions/listen); its answers are held to
//     testdata/wire-2026-07-28.golden.
//   - internal/session: the session dialect, served by the go-sdk (its
//     stateful handler for HTTP sessions, its stateless one for requests of
//     no session, stdio); a session that declared elicitation gives its
//     calls an asker (elicitation/create) for a run's questions. The
//     2025-11-25 task methods (params.task, tasks/get|result|list|cancel)
//     of session-dialect clients are served there too.
//   - internal/wire: what every dialect shares. The one JSON-RPC writer,
//     the one content negotiation and the one SSE stream with keep-alives;
//     the request checks; the Tasks extension's shapes of runs (also for
//     session-dialect requests that declared the extension) and the poll
//     interval of a task; tools/list; the spans and metrics of a request.
//   - internal/core: the version-neutral core. A dialect decodes tools/call
//     into a core.CallRequest and the task methods into a task id and its
//     inputResponses; the core answers in its own terms (a tool result,
//     input required, a task created, a refusal by the tool's task
//     support), which each dialect encodes in its shape. What a transport
//     offers a call (ask the client, send progress, keep the response
//     alive, learn of an overload) reaches the core through its interfaces
//     Asker, ProgressNotifier and Response.
//
// A call owns the run it starts until its response is delivered
// (package ownership); the requestState of an MRTR round is sealed by
// package requeststate.
package mcpmount
