// Package modern is the MCP mount's 2026-07-28 dialect over HTTP:
// stateless streamable HTTP, one request per POST with the _meta triple
// (protocol version, client capabilities, client info), and the Tasks
// extension. It answers every method of it itself (server/discover,
// tools/list, tools/call, tasks/get|update|cancel, subscriptions/listen),
// decoding each request into the core's terms and encoding the core's
// answers in the shapes of 2026-07-28 (package wire).
//
// The mount's intake runs Validate on every 2026-07-28 request and hands
// the ones that pass to Dialect.Serve.
package modern
