// Package modern is the MCP mount's modern dialect (2026-07-28): stateless
// streamable HTTP, one request per POST with the _meta triple (protocol
// version, client capabilities, client info), and the Tasks extension; and
// the same requests on a stdio stream (ServeMessage). It answers every
// method of it itself (server/discover, tools/list, tools/call,
// tasks/get|update|cancel, subscriptions/listen), decoding each request into
// the core's terms and encoding the core's answers in the shapes of
// 2026-07-28 (package wire).
//
// The mount's HTTP intake runs Validate on every 2026-07-28 request and
// hands the ones that pass to Dialect.Serve; on stdio, the stream hands
// the requests Takes picks to Dialect.ServeMessage, which runs the checks
// of Validate a stream can fail (it has no headers).
package modern
