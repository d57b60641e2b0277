// Package session is the MCP mount's session dialect (2025-06-18, 2025-11-25
// and before), served by the go-sdk: in HTTP sessions (its stateful handler,
// so that a waiting call can ask the run's questions with
// elicitation/create), without one (its stateless handler), and over stdio,
// whose stream hands 2026-07-28 requests to the modern dialect (Divert)
// before the go-sdk sees them. Its middleware decodes tools/call into the
// core's terms and encodes the core's answers; a session that declared
// elicitation gives its calls an asker. The 2025-11-25 task methods
// (params.task, tasks/get|result|list|cancel) of session-dialect clients are
// served here too, with their own task shape and refusals.
package session
