package signals

import (
	"testing"
	"time"
)

func TestMessageAt(t *testing.T) {
	p := &Progress{Step: "generate", Done: 11, Total: 30}
	for _, tc := range []struct {
		status Status
		p      *Progress
		want   string
	}{
		{StatusRunning, nil, "the run is running"},
		{StatusRunning, p, "the run is running: step generate (11/30)"},
		{StatusRunning, &Progress{Done: 3}, "the run is running (3)"},
		{StatusRunning, &Progress{Step: "not a step name!"}, "the run is running"},
		{StatusCancelling, p, "the run is cancelling: step generate (11/30)"},
		{StatusCancelled, p, "the run is cancelled: step generate (11/30)"},
		{StatusCompleted, p, "the run is completed"},
		{StatusFailed, p, "the run is failed"},
	} {
		if got := tc.status.MessageAt(tc.p); got != tc.want {
			t.Errorf("%s.MessageAt(%+v) = %q, want %q", tc.status, tc.p, got, tc.want)
		}
	}
}

// TestCurrentMessage: a cancelling run's message says that its
// cancellation was requested, how long ago (to the minute), and that it
// has not closed, keeping what followed "the run is cancelling"; any other
// run's is its StatusMessage.
func TestCurrentMessage(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, tc := range []struct {
		name string
		snap Snapshot
		want string
	}{
		{"running", Snapshot{Status: StatusRunning, StatusMessage: "the run is running: step a (1/2)"}, "the run is running: step a (1/2)"},
		{"cancelled", Snapshot{Status: StatusCancelled, StatusMessage: "the run is cancelled", CancelRequestedAt: at(time.Hour)}, "the run is cancelled"},
		{"cancelling, time unknown", Snapshot{Status: StatusCancelling, StatusMessage: "the run is cancelling"},
			"cancellation requested; the run has not closed yet"},
		{"seconds", Snapshot{Status: StatusCancelling, StatusMessage: "the run is cancelling", CancelRequestedAt: at(59 * time.Second)},
			"cancellation requested under a minute ago; the run has not closed yet"},
		{"minutes, step kept", Snapshot{Status: StatusCancelling, StatusMessage: "the run is cancelling: step copy (11/30)", CancelRequestedAt: at(3*time.Minute + 50*time.Second)},
			"cancellation requested 3m ago; the run has not closed yet: step copy (11/30)"},
		{"hours, stalled kept", Snapshot{Status: StatusCancelling, StatusMessage: `the run is cancelling; stalled: no worker polls task queue "q"`, CancelRequestedAt: at(2*time.Hour + 5*time.Minute)},
			`cancellation requested 2h5m ago; the run has not closed yet; stalled: no worker polls task queue "q"`},
		{"days", Snapshot{Status: StatusCancelling, StatusMessage: "the run is cancelling", CancelRequestedAt: at(76 * time.Hour)},
			"cancellation requested 3d4h ago; the run has not closed yet"},
		{"another message", Snapshot{Status: StatusCancelling, StatusMessage: "something else", CancelRequestedAt: at(time.Minute)},
			"cancellation requested 1m ago; the run has not closed yet"},
	} {
		if got := tc.snap.CurrentMessage(now); got != tc.want {
			t.Errorf("%s: CurrentMessage = %q, want %q", tc.name, got, tc.want)
		}
	}
}
