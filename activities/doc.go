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
// the activity has none), each carrying the details of the latest call,
// unless the worker caps the wait. A worker of workflows.Registry.Run caps
// it at one second (worker.Options.MaxHeartbeatThrottleInterval and
// DefaultHeartbeatThrottleInterval), so Run's heartbeats, one a second,
// reach Temporal as they are made.
//
// # The one rule
//
// Do an activity's work inside Run, and give the activity a HeartbeatTimeout
// of a few seconds (from 2 s up; 5 s is a good default) in its options:
//
//	opts := workflow.GetActivityOptions(ctx)
//	opts.HeartbeatTimeout = 5 * time.Second
//	ctx = workflow.WithActivityOptions(ctx, opts)
//
// What that buys, on a worker of Registry.Run with no option set:
//
//   - a cancellation of the run reaches the work within about a second,
//     whatever the HeartbeatTimeout (a test holds it under 2.5 s with a 5 s
//     timeout; the SDK alone took 3.5 s), and the activity ends as
//     cancelled with no ERROR or WARN line in the worker's log (Run
//     returns the work's context error as a benign error, which the SDK
//     logs at DEBUG, and Registry.Run's worker logs the SDK's warning
//     about the heartbeat that brought the cancellation at DEBUG too);
//   - progress (ReportProgress, or Run's details) is saved with Temporal
//     about once a second, so a crash loses at most about a second of it
//     (a test kills a worker process with SIGKILL during 1.5 s steps: the
//     retry resumes at most one step behind the last one the run was told
//     of; with the SDK's own throttle it lost three);
//   - an attempt whose worker died is retried once the HeartbeatTimeout
//     passes without a heartbeat, and the retry resumes from LastProgress.
//
// The timeouts: HeartbeatTimeout is how long Temporal waits for the next
// heartbeat before it deems the attempt lost and retries it; without one a
// lost attempt is retried only after its StartToCloseTimeout, which bounds
// the whole attempt. Never set a HeartbeatTimeout on an activity that does
// not heartbeat: every attempt would time out and run again.
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
