package mcpmount

import "time"

// projector turns run snapshots into the task shapes of the dialects (the
// Tasks extension's in dialect_2026_tasks.go, the 2025-11-25 task methods'
// in dialect_2025_11_25_tasks.go).
type projector struct {
	pollIntervalMs int64
}

// waitingPollFactor is how many times Options.PollInterval a client is
// told to wait between two polls of a task that waits for its input.
const waitingPollFactor = 4

// pollInterval is the pollIntervalMs of a task in the given status: the
// configured interval while the run works, and waitingPollFactor times it
// while the task waits for the client's input (a human's answer), which the
// run service's reads reuse for a while anyway (runs.Options.ReadWindow).
func (p projector) pollInterval(status string) int64 {
	if status == taskInputRequired {
		return waitingPollFactor * p.pollIntervalMs
	}
	return p.pollIntervalMs
}

func timestamp(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Format(time.RFC3339Nano)
}
