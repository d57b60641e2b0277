// Package core is the version-neutral MCP core of the mount: a tools/call
// becomes a run (CallTool), a task is read, answered and cancelled
// (Tasks.Get, Tasks.Update, Tasks.Cancel), and the questions of a waiting
// call's run are asked and their answers resolved, in the core's own terms.
//
// A wire dialect decodes its requests into a CallRequest (or a task id
// and its inputResponses) and encodes the outcomes in its own shape: a
// *ToolResult, an *InputRequired (a multi-round-trip round), a
// *TaskCreated, or a refusal (*TaskRefusal, *Overloaded, a *jsonrpc.Error). What the
// transport of a call offers the core is a few small interfaces the
// dialect implements: Asker (ask the client during the call),
// ProgressNotifier (send progress) and Response (keep-alives);
// the request's ownership claim (package ownership) tells it that the
// request is gone. The core names no dialect, no go-sdk session and no
// HTTP writer, and never edits what a client declared.
package core
