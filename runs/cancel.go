package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
)

// Cancel answers cancelRun: it records the reason with the run (the
// cancelReason signal; a plain workflow has no handler for it and gets
// none) and requests workflow cancellation. It returns ErrTerminal (and the
// run's snapshot) when the run has already ended.
//
// It returns once Temporal accepted the request, without reading the run
// afterwards: the snapshot reads cancelling, with the reason; the run reads
// cancelling until its execution closes (a run whose code never honours
// the request stays so, and can be cancelled again: Temporal keeps the
// first request), then cancelled. A run of the run
// contract that this process started or read lately (reader.known) is
// cancelled with the same two calls as the raw SDK's: the signal fails if
// the run has closed. Any other run is described first, to check its
// tenant, whether it is open and whether it is plain (Temporal accepts a
// cancellation request for a closed run, so a plain run needs the check).
func (s *Service) Cancel(ctx context.Context, caller signals.Subject, runID, reason string) (signals.Snapshot, error) {
	if err := authorize(caller, runID); err != nil {
		return signals.Snapshot{}, err
	}
	reason = cmp.Or(reason, signals.ReasonCallerRequested)
	entry, known := s.rd.known.entry(runID)
	facts := entry.facts
	snap := signals.Snapshot{RunID: runID, Tool: entry.tool, Owner: signals.Owner{Tenant: caller.Tenant}, LastSequence: -1}
	if facts&factClosed != 0 {
		r, err := s.rd.read(ctx, runID, caller.Tenant)
		if err != nil {
			return signals.Snapshot{}, err
		}
		return r.snap, ErrTerminal
	}
	plain := facts&factPlain != 0
	if !known || plain {
		info, err := s.rd.describe(ctx, runID, caller.Tenant)
		if err != nil {
			return signals.Snapshot{}, err
		}
		s.rd.noteDescribed(runID, info)
		plain = s.rd.plain(info)
		if plain {
			facts = factPlain
		}
		if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			s.rd.known.add(runID, facts|factClosed)
			rec, err := s.rd.closeRecord(ctx, info)
			if err != nil {
				return signals.Snapshot{}, err
			}
			return rec.Snapshot, ErrTerminal
		}
		s.rd.known.add(runID, facts)
		snap = s.rd.fromInfo(info)
	}
	req := signals.CancelRequest{Reason: reason, CancelledBy: caller}
	// What Get held of the run no longer holds once the request is sent.
	defer s.rd.reads.drop(runID)
	if !plain {
		if err := s.client.SignalWorkflow(ctx, runID, "", signals.SignalCancelReason, req); err != nil {
			if missing(err) {
				return s.terminalSnapshot(ctx, runID, caller.Tenant, snap)
			}
			return snap, fmt.Errorf("signal cancel reason to run %s: %w", runID, err)
		}
	}
	// The request's reason (the history's cancel-requested cause) is the
	// CancelRequest too, so that a plain run's history names who asked.
	cause, err := json.Marshal(req)
	if err != nil {
		return snap, fmt.Errorf("cancel run %s: %w", runID, err)
	}
	if err := s.client.CancelWorkflowWithOptions(ctx, client.CancelWorkflowOptions{WorkflowID: runID, Reason: string(cause)}); err != nil {
		if missing(err) {
			return s.terminalSnapshot(ctx, runID, caller.Tenant, snap)
		}
		return snap, fmt.Errorf("cancel run %s: %w", runID, err)
	}
	s.log.Info("run cancel requested", s.rd.known.fields(ctx, runID, zap.String("reason", reason))...)
	snap.Status, snap.StatusMessage = signals.StatusCancelling, signals.StatusCancelling.Message()
	snap.CancelReason = reason
	if e, _ := s.rd.known.entry(runID); snap.CancelRequestedAt.IsZero() {
		// A cancellation requested before, as a read found it: this
		// request changes nothing (Temporal keeps the first).
		snap.CancelRequestedAt = e.cancelAt
	}
	return snap, nil
}

// terminalSnapshot reads a run that closed (or disappeared) while being
// cancelled: ErrTerminal with its snapshot, or ErrNotFound.
func (s *Service) terminalSnapshot(ctx context.Context, id, tenant string, fallback signals.Snapshot) (signals.Snapshot, error) {
	r, err := s.rd.read(ctx, id, tenant)
	switch {
	case errors.Is(err, ErrNotFound):
		return signals.Snapshot{}, ErrNotFound
	case err != nil:
		return fallback, ErrTerminal
	}
	return r.snap, ErrTerminal
}
