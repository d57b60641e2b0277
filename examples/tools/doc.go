// Package tools holds the example tools the stock commands serve, with
// their activities: publish_report, delay and approve_expense (an approval
// that escalates to a director after a deadline). They are written with the
// author library, package workflows, and the activity-side library, package
// activities, exactly as a user writes tools in their own module. (The
// conformance fixtures the stock commands add with OPENWOP_FIXTURES=on are
// test tools of their own, in internal/testing/conformancetools.)
//
// Every activity that can take long heartbeats, so that a run cancellation
// (which reaches an activity only through its heartbeats) stops it promptly,
// and returns as soon as its context is cancelled; the tools that run Sleep
// set a HeartbeatTimeout on it, so that the SDK sends those heartbeats every
// few seconds (see "Activities" in package workflows). Every activity may
// run more than once and is idempotent: GenerateReport derives the report id
// from the run, PublishReport overwrites the same report, and a retried
// Sleep resumes from its last heartbeat.
//
// The workflow type of each tool is its name and the activity names are the
// method names of Activities; recorded histories (in
// internal/testing/conformancetools, see docs/upgrades.md) replay against
// both, so neither may change.
package tools
