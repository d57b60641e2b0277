// Package wire is what every wire dialect of the MCP mount shares: the one
// JSON-RPC writer (WriteRefusal, EncodeResponse), the one content
// negotiation (Negotiate) and the one SSE stream with keep-alives
// (EventStream); the checks of a request before any method runs
// (CheckEnvelope, CheckNumbers, NestingDepth) and the request as the
// mount decoded it (Incoming); the Tasks extension's shapes of runs
// (Projector: Task, CreateTaskResult, DetailedTaskResult, AckResult) and
// how a call's core answer is encoded in them (Projector.AnswerCall);
// tools/list (Lister); the spans and metrics of a request (Observer).
//
// It is no dialect: a dialect imports it and the core, never another
// dialect.
package wire
