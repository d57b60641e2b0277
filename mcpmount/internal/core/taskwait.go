package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// List lists the caller's tasks (the session dialect's tasks/list): its
// tenant's runs, from Temporal visibility, a page at a time with the run
// service's sealed cursors (cursor "" for the first page). It returns the
// page's runs and the cursor of the next page ("" after the last).
func (t *Tasks) List(ctx context.Context, cursor string) ([]signals.Snapshot, string, error) {
	caller, err := t.core.Caller(ctx)
	if err != nil {
		return nil, "", err
	}
	page, err := t.core.runs.List(ctx, caller, runs.ListRequest{Cursor: cursor})
	if err != nil {
		if errors.Is(err, runs.ErrBadCursor) {
			return nil, "", InvalidParams("invalid cursor: it was not issued by tasks/list for this caller")
		}
		t.core.log.Error("list runs", zap.Error(err))
		return nil, "", Internal()
	}
	return page.Runs, page.NextCursor, nil
}

// Result waits for the end of the task rawID's run (the session dialect's
// tasks/result) and returns its last reading, terminal: the dialect
// answers what the tools/call would have answered (RunResult, or the run's
// JSON-RPC error). Until then claim owns the run, as a blocking call's
// does: if the request goes away first, the run is cancelled and Result
// returns context.Canceled.
//
// While the run waits for input, each open question the caller may answer
// (Askable) is asked once through a, one at a time, and its answer
// resolves it through the path of tasks/update (Core.askOne). With a nil
// a (a request that cannot carry server requests) the request waits: the
// task reads input_required meanwhile. A question that stays open (the
// client could not answer) is left to others.
func (t *Tasks) Result(ctx context.Context, claim *ownership.Claim, a Asker, rawID json.RawMessage) (signals.Snapshot, error) {
	caller, id, err := t.target(ctx, methods.TasksResult, true, rawID)
	if err != nil {
		return signals.Snapshot{}, err
	}
	snap, err := t.core.runs.Get(ctx, caller, id)
	if err != nil {
		return signals.Snapshot{}, t.core.lookupErr(ctx, "get run", id, err)
	}
	if !snap.Status.Terminal() {
		claim.Own(caller, id)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer claim.AfterGone(cancel)()
	asked := map[string]bool{}
	for !snap.Status.Terminal() {
		if a != nil {
			if open := unasked(snap, caller, asked); len(open) > 0 {
				if err := t.askOpen(wctx, a, caller, id, open, asked); err != nil {
					return signals.Snapshot{}, err
				}
			}
		}
		snap, err = t.core.runs.Await(wctx, caller, id, func(s signals.Snapshot) bool {
			return s.Status.Terminal() || a != nil && len(unasked(s, caller, asked)) > 0
		}, runs.PublishedOnly())
		switch {
		case err == nil:
		case ctx.Err() != nil || isGone(claim):
			// The client left: the claim settles undelivered and cancels
			// the run; nothing more is sent for this request.
			return signals.Snapshot{}, context.Canceled
		default:
			return signals.Snapshot{}, t.core.lookupErr(ctx, "await run", id, err)
		}
	}
	return snap, nil
}

// unasked returns the open interrupts the client may be asked for caller
// (Askable: one that asks other approvers is left to them) and was not
// asked yet.
func unasked(snap signals.Snapshot, caller signals.Subject, asked map[string]bool) []signals.Interrupt {
	var out []signals.Interrupt
	for _, it := range snap.Interrupts {
		if Askable(it, caller) && !asked[it.ID] {
			out = append(out, it)
		}
	}
	return out
}

// askOpen asks the client each open interrupt through a, one at a time in
// id order, and resolves it with the answer (Core.askOne: an answer that
// does not fit is asked again). An interrupt is asked once per request:
// one that stays open (the client could not answer) is then left to
// others, and the request waits for the run's end.
func (t *Tasks) askOpen(ctx context.Context, a Asker, caller signals.Subject, id string, open []signals.Interrupt, asked map[string]bool) error {
	sort.SliceStable(open, func(i, j int) bool { return open[i].ID < open[j].ID })
	for _, it := range open {
		asked[it.ID] = true
		err := t.core.askOne(ctx, a, caller, id, it)
		switch {
		case ctx.Err() != nil:
			return context.Canceled
		case err != nil:
			// The question stays open for another channel.
			t.core.RunLog(ctx, id, "").Info("elicitation for a task's input failed; the task stays input_required",
				zap.String("interruptId", it.ID), zap.Error(err))
		}
	}
	return nil
}

// Readable reports whether caller may read the run runID (a
// subscriptions/listen honours only such task ids). A run that does not
// exist or is another tenant's is not readable, and that is no error.
func (t *Tasks) Readable(ctx context.Context, caller signals.Subject, runID string) (bool, error) {
	if _, err := t.core.runs.Get(ctx, caller, runID); err != nil {
		if errors.Is(err, runs.ErrNotFound) || errors.Is(err, runs.ErrTenantMismatch) {
			return false, nil
		}
		return false, fmt.Errorf("read run %s: %w", runID, err)
	}
	return true, nil
}

// Follow calls observe with the states of the run runID as its history
// publishes them (at least each change of its status, open interrupts and
// cancel reason: a long poll of the history), until observe returns true,
// the run is terminal or ctx ends. It returns the state read last.
func (t *Tasks) Follow(ctx context.Context, caller signals.Subject, runID string, observe func(signals.Snapshot) bool) (signals.Snapshot, error) {
	snap, err := t.core.runs.Await(ctx, caller, runID, observe, runs.PublishedOnly())
	if err != nil {
		return signals.Snapshot{}, fmt.Errorf("follow run %s: %w", runID, err)
	}
	return snap, nil
}
