package wire

import (
	"time"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/signals"
)

// Projector turns run snapshots into the task shapes of the dialects (the
// Tasks extension's here, the 2025-11-25 task methods' in the session
// era's dialect).
type Projector struct {
	// Pacer chooses the poll interval of each task, and learns from each
	// ended run projected how long its tool's runs take.
	Pacer *core.Pacer
	// ResultLimit is the core's result limit (core.RunResult).
	ResultLimit int
}

// PollInterval is the pollIntervalMs of snap's task in the given status
// (core.Pacer: derived from how long the tool's runs take, four times
// longer while the task waits for the client's input, a human's answer).
func (p Projector) PollInterval(snap signals.Snapshot, status string) int64 {
	p.Pacer.Observe(snap)
	return p.Pacer.Interval(snap.Tool, status == core.TaskInputRequired).Milliseconds()
}

// Timestamp is t as a task's timestamps are written (RFC 3339, UTC; the
// zero time is the Unix epoch).
func Timestamp(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Format(time.RFC3339Nano)
}
