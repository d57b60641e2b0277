package signals

import "testing"

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
