package mcpmount

import (
	"context"

	"github.com/openwop/temporal-mcp/signals"
)

// heldResolver is implemented by a Runs that can resolve an interrupt from
// a snapshot the caller read in the same request (*runs.Service does),
// saving a read of the run.
type heldResolver interface {
	ResolveHeld(ctx context.Context, caller signals.Subject, runID string, held signals.Snapshot, r signals.Resolution) (signals.Snapshot, error)
}

// resolve resolves r on the run, checking it against held (the snapshot
// this request read) when Runs supports it, and with Runs.Resolve
// otherwise. Either way the run applies the resolution only when it is the
// first eligible one of an open interrupt, and the answer comes after it
// was applied.
func (m *Mount) resolve(ctx context.Context, caller signals.Subject, runID string, held signals.Snapshot, r signals.Resolution) (signals.Snapshot, error) {
	if h, ok := m.runs.(heldResolver); ok {
		return h.ResolveHeld(ctx, caller, runID, held, r)
	}
	return m.runs.Resolve(ctx, caller, runID, r)
}
