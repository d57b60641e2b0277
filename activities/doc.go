// Package activities is the activity side of the author library: what a
// tool's Temporal activity needs to be cancellable and to report its
// progress. Package workflows is the workflow side.
//
// # Cancellation arrives through heartbeats
//
// A Temporal activity learns that its run was cancelled only when it
// heartbeats: the answer to a heartbeat says that cancellation was
// requested, and the SDK then cancels the activity's context. An activity
// that never heartbeats runs to its end (or to its StartToCloseTimeout)
// after the run is gone. Run heartbeats on an interval while the activity's
// work runs, so that the work's context is cancelled promptly; the work only
// has to return when its context is done.
//
// The SDK throttles heartbeats: it sends one to the server at once and then
// at most one every 80% of the activity's HeartbeatTimeout (30 seconds when
// the activity has none), each carrying the details of the latest call. So
// a cancellation reaches an activity within about 80% of its
// HeartbeatTimeout, and a workflow that runs a long activity should set one
// (a few seconds) in its activity options. Heartbeating often costs nothing.
//
// # Progress
//
// Progress is the heartbeat detail an activity records to say how far it
// has got: done out of total, and the step it is at. Recorded with
// RecordProgress or returned by Run's details function, it is what the
// server keeps as the activity's last heartbeat details: a retried attempt
// reads it back with LastProgress to resume where the previous attempt
// stopped, and whoever describes the run sees it on the pending activity.
package activities
