package wire

import "time"

// Projector turns run snapshots into the task shapes of the dialects (the
// Tasks extension's here, the 2025-11-25 task methods' in the session
// era's dialect).
type Projector struct {
	// PollIntervalMs is the pollIntervalMs of a working task.
	PollIntervalMs int64
}

// waitingPollFactor is how many times Options.PollInterval a client is
// told to wait between two polls of a task that waits for its input.
const waitingPollFactor = 4

// PollInterval is the pollIntervalMs of a task in the given status: the
// configured interval while the run works, and waitingPollFactor times it
// while the task waits for the client's input (a human's answer), which the
// run service's reads reuse for a while anyway (runs.Options.ReadWindow).
func (p Projector) PollInterval(status string) int64 {
	if status == TaskInputRequired {
		return waitingPollFactor * p.PollIntervalMs
	}
	return p.PollIntervalMs
}

func Timestamp(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Format(time.RFC3339Nano)
}
