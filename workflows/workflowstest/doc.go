// Package workflowstest runs tools written with package workflows in the
// Temporal SDK's test environment (go.temporal.io/sdk/testsuite), the way
// an agent calls them through the server: an author tests a tool without
// knowing the run contract (signals.StartRequest, the resolveInterrupt
// signal, interrupt ids), as package net/http/httptest tests a handler
// without a network.
//
// An Env makes one tool call. Env.Answer registers, by the key the tool
// gives a question, the answer an agent would give; the Env answers each
// question when the run asks it, after checking the answer as the server
// checks it, and records the question as an agent sees it (Question: the
// key of MCP's inputRequests, the message and the requestedSchema). Env.Call
// runs the call to its end in virtual time (timers fire at once) and returns
// the Result: the run's final snapshot, its output, its event log and every
// question it asked. Env.Temporal is the SDK's environment, for mocking
// activities (OnActivity) or anything else the SDK offers. A run that never
// ends (it waits for something that never comes, or its tool ignores its
// cancellation) is no Result but an error that names the run, says that it
// is still open and what it waits for: its status, its open questions.
//
// A question with a deadline (workflows.ApprovalRequest.Timeout and the
// like) expires in virtual time too: leave it unanswered, or answer it
// late with Env.AnswerAt, which gives an answer at a virtual time and, for
// a question no longer open (expired, withdrawn, answered), records its
// refusal in Question.Refusals (errors.Is workflows.ErrExpired for an
// expired one), as REST and the companion tool refuse it, while the run
// goes on.
//
// The tool's own activities run as they would on a worker, package
// activities included: activities.ReportProgress reaches the run (the Env
// gives every activity activities.WithSignal) and shows in
// Result.Progress, heartbeats (activities.Run, activities.RecordProgress)
// are recorded, a retried attempt reads the last one with
// activities.LastProgress, and a cancelled activity's context is
// cancelled (the SDK's environment alone never does). A failure inside
// the SDK's environment (a call of a Temporal service it does not
// offer, which ends the test binary) is logged with its cause on
// standard error when the Env has no Logger.
//
// Replay and ReplayAll replay recorded workflow histories (the JSON of
// `temporal workflow show --output json`) with the current code: a change
// that would fail the runs in flight after a release fails the replay of the
// histories recorded before it (docs/upgrades.md). ReplayOpen replays the
// runs in flight in a namespace with the code of the next build, and says
// which the deploy would break (OpenRun.Breaks: not those pinned to
// another Worker Deployment version, which finish on their own build).
package workflowstest
