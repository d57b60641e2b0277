package runs

import (
	"context"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// Amend returns a Backend that answers every snapshot of b, from every
// operation, through amend: the one place an edge applies a rule of its
// own to what the run service reports (the MCP mount and the REST API
// check results against their tools' output schemas with it,
// catalog.OutputCheck), so that every dialect and REST see the same
// answer. Await's done sees amended snapshots too. A nil amend returns b.
func Amend(b Backend, amend func(context.Context, signals.Snapshot) signals.Snapshot) Backend {
	if amend == nil || b == nil {
		return b
	}
	return &amended{Backend: b, amend: amend}
}

// amended is the Backend Amend returns.
type amended struct {
	Backend
	amend func(context.Context, signals.Snapshot) signals.Snapshot
}

func (c *amended) Start(ctx context.Context, req NewRun) (signals.Snapshot, error) {
	snap, err := c.Backend.Start(ctx, req)
	return c.amend(ctx, snap), err
}

func (c *amended) Get(ctx context.Context, caller signals.Subject, runID string, opts ...ReadOption) (signals.Snapshot, error) {
	snap, err := c.Backend.Get(ctx, caller, runID, opts...)
	return c.amend(ctx, snap), err
}

func (c *amended) Events(ctx context.Context, caller signals.Subject, runID string, afterSequence int, wait time.Duration) (signals.EventPage, signals.Snapshot, error) {
	page, snap, err := c.Backend.Events(ctx, caller, runID, afterSequence, wait)
	return page, c.amend(ctx, snap), err
}

func (c *amended) Resolve(ctx context.Context, caller signals.Subject, runID string, r signals.Resolution, opts ...ResolveOption) (signals.Snapshot, error) {
	snap, err := c.Backend.Resolve(ctx, caller, runID, r, opts...)
	return c.amend(ctx, snap), err
}

func (c *amended) Cancel(ctx context.Context, caller signals.Subject, runID, reason string) (signals.Snapshot, error) {
	snap, err := c.Backend.Cancel(ctx, caller, runID, reason)
	return c.amend(ctx, snap), err
}

func (c *amended) Await(ctx context.Context, caller signals.Subject, runID string, done func(signals.Snapshot) bool, opts ...AwaitOption) (signals.Snapshot, error) {
	snap, err := c.Backend.Await(ctx, caller, runID, func(s signals.Snapshot) bool { return done(c.amend(ctx, s)) }, opts...)
	return c.amend(ctx, snap), err
}
