package runs

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"time"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
)

// Resolve answers resolveInterruptByRun: it checks that the interrupt is
// open, that the caller is an eligible approver and that the answer fits
// the question (answers.Check: an answer that does not is refused with an
// *answers.Error and nothing is signalled), signals the resolution (with
// ResolvedBy set to the caller) and returns the snapshot after the run
// applied it. Of two concurrent resolutions one returns nil and the other
// ErrAlreadyResolved. It reads the run once before the signal and once
// after; Held saves the first read when the caller holds a snapshot of the
// run (one of another run or tenant is ignored).
func (s *Service) Resolve(ctx context.Context, caller signals.Subject, runID string, r signals.Resolution, opts ...ResolveOption) (signals.Snapshot, error) {
	if err := authorize(caller, runID); err != nil {
		return signals.Snapshot{}, err
	}
	ids := []string{r.InterruptID}
	if held, ok := HeldSnapshot(opts...); ok && held.RunID == runID && held.Owner.Tenant == caller.Tenant && shows(held, ids) {
		return s.resolve(ctx, caller, runID, held, r)
	}
	// A reading that does not know the interrupt may predate it: the run
	// asked again since (Showing).
	cur, err := s.rd.readKnowing(ctx, runID, caller.Tenant, nil, func(snap signals.Snapshot) bool { return shows(snap, ids) })
	if err != nil {
		return signals.Snapshot{}, err
	}
	return s.resolve(ctx, caller, runID, cur.snap, r)
}

// resolve checks r against snap (the interrupt open, the caller eligible,
// the answer fitting the question: answers.Check), signals it and reads the run after the
// run applied it (queries are strongly consistent: the query waits for the
// workflow task the signal caused).
func (s *Service) resolve(ctx context.Context, caller signals.Subject, runID string, snap signals.Snapshot, r signals.Resolution) (signals.Snapshot, error) {
	it, open := snap.Interrupt(r.InterruptID)
	if !open {
		if _, done := snap.ResolvedBy(r.InterruptID); done {
			return snap, ErrAlreadyResolved
		}
		if err := withdrawnError(snap, r.InterruptID); err != nil {
			return snap, err
		}
		if snap.Status.Terminal() {
			return snap, ErrTerminal
		}
		return snap, ErrNotOpen
	}
	if !it.Eligible(caller) {
		return snap, ErrNotEligible
	}
	if err := answers.Check(it, r); err != nil {
		return snap, err
	}
	r.ResolvedBy = caller
	nonce := make([]byte, 12)
	if _, err := io.ReadFull(s.rand, nonce); err != nil {
		return snap, fmt.Errorf("resolve interrupt: %w", err)
	}
	r.RequestID = base64.RawURLEncoding.EncodeToString(nonce)
	// The signal and the read that confirms it follow one another.
	ctx, release, err := s.limit.hold(ctx)
	if err != nil {
		return snap, fmt.Errorf("resolve interrupt: %w", err)
	}
	defer release()
	if err := s.client.SignalWorkflow(ctx, runID, "", signals.SignalResolveInterrupt, r); err != nil {
		if !missing(err) {
			return snap, fmt.Errorf("signal resolution to run %s: %w", runID, err)
		}
		// The run closed in between, perhaps because a concurrent
		// resolution of this very interrupt finished it.
		final, lerr := s.rd.read(ctx, runID, caller.Tenant)
		if lerr != nil {
			return snap, ErrTerminal
		}
		if _, done := final.snap.ResolvedBy(r.InterruptID); done {
			return final.snap, ErrAlreadyResolved
		}
		return final.snap, ErrTerminal
	}
	// What Get held of the run predates the resolution.
	s.rd.reads.drop(runID)
	epoch, start := s.rd.reads.currentEpoch(), time.Now()
	if e, _ := s.rd.known.entry(runID); s.rd.workers.unserved(ctx, e.target) {
		// No worker would answer the read that confirms it.
		return snap, ErrNotApplied
	}
	cur, err := s.rd.readAfterSignal(ctx, runID, caller.Tenant)
	if err != nil {
		return snap, err
	}
	if cur.described {
		// No worker answered getRun (what the run published holds no
		// resolutions).
		return cur.snap, ErrNotApplied
	}
	s.rd.reads.put(runID, cur, epoch, time.Since(start))
	after := cur.snap
	got, done := after.ResolvedBy(r.InterruptID)
	switch {
	case done && got.RequestID == r.RequestID:
		return after, nil
	case done:
		return after, ErrAlreadyResolved
	case withdrawnError(after, r.InterruptID) != nil:
		// It expired, or was withdrawn, before the run read the answer.
		return after, withdrawnError(after, r.InterruptID)
	case after.Status.Terminal():
		return after, ErrTerminal
	default:
		return after, ErrNotOpen
	}
}

// withdrawnError is WithdrawalError of the reason snap's run withdrew the
// interrupt id for, nil when it did not withdraw it.
func withdrawnError(snap signals.Snapshot, id string) error {
	w, ok := snap.WithdrawnAs(id)
	if !ok {
		return nil
	}
	return WithdrawalError(w.Reason)
}

// WithdrawalError is the error of an answer to an interrupt its run
// withdrew for reason: ErrExpired for signals.WithdrawnExpired,
// ErrWithdrawn otherwise.
func WithdrawalError(reason string) error {
	if reason == signals.WithdrawnExpired {
		return ErrExpired
	}
	return ErrWithdrawn
}
