package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// Events answers pollRunEvents: the events after afterSequence and the
// run's snapshot. When there are none and wait > 0, it waits up to wait for
// the next event or the run's end.
func (s *Service) Events(ctx context.Context, caller signals.Subject, runID string, afterSequence int, wait time.Duration) (signals.EventPage, signals.Snapshot, error) {
	if err := authorize(caller, runID); err != nil {
		return signals.EventPage{}, signals.Snapshot{}, err
	}
	cur, err := s.rd.read(ctx, runID, caller.Tenant)
	if err != nil {
		return signals.EventPage{}, signals.Snapshot{}, err
	}
	snap, events, described := cur.snap, cur.events, cur.described
	if snap.LastSequence <= afterSequence && !snap.Status.Terminal() && wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		next, err := s.rd.await(wctx, runID, caller.Tenant, followEveryTask, func(x signals.Snapshot) bool { return x.LastSequence > afterSequence })
		cancel()
		switch {
		case err == nil:
			snap, described = next, false
		case ctx.Err() != nil:
			return signals.EventPage{}, signals.Snapshot{}, ctx.Err()
		case !errors.Is(err, context.DeadlineExceeded):
			return signals.EventPage{}, signals.Snapshot{}, err
		}
		if snap.Status.Terminal() {
			if cur, err = s.rd.read(ctx, runID, caller.Tenant); err != nil {
				return signals.EventPage{}, signals.Snapshot{}, err
			}
			snap, events = cur.snap, cur.events
		}
	}
	if snap.Status.Terminal() {
		page := signals.EventPage{LastSequence: snap.LastSequence, Events: []signals.Event{}}
		for _, e := range events {
			if e.Sequence > afterSequence {
				page.Events = append(page.Events, e)
			}
		}
		return page, snap, nil
	}
	if snap.LastSequence <= afterSequence {
		return signals.EventPage{Events: []signals.Event{}, LastSequence: snap.LastSequence}, snap, nil
	}
	if described {
		// No worker answered getRun, so none would answer the events
		// query: no events until one does (the caller keeps its place).
		return signals.EventPage{Events: []signals.Event{}, LastSequence: afterSequence}, snap, nil
	}
	v, err := s.client.QueryWorkflow(ctx, runID, "", signals.QueryEvents, signals.EventsQuery{AfterSequence: afterSequence})
	if err != nil {
		return signals.EventPage{}, signals.Snapshot{}, fmt.Errorf("query events of run %s: %w", runID, err)
	}
	var page signals.EventPage
	if err := v.Get(&page); err != nil {
		return signals.EventPage{}, signals.Snapshot{}, fmt.Errorf("decode events of run %s: %w", runID, err)
	}
	if page.Events == nil {
		page.Events = []signals.Event{}
	}
	return page, snap, nil
}
