package audit

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
)

// Backend returns b with every run start, answer and cancellation written
// to the trail, and every operation refused with runs.ErrTenantMismatch or
// runs.ErrNotEligible. With a nil trail it returns b itself.
func (t *Trail) Backend(b runs.Backend) runs.Backend {
	if t == nil {
		return b
	}
	return &backend{next: b, trail: t}
}

// backend is the audited runs.Backend.
type backend struct {
	next  runs.Backend
	trail *Trail
}

func (a *backend) Start(ctx context.Context, req runs.NewRun) (signals.Snapshot, error) {
	snap, err := a.next.Start(ctx, req)
	r := Record{Action: ActionStart, RunID: snap.RunID, Tool: req.Tool.Name, Subject: req.Caller, Transport: req.Transport}
	a.trail.Write(withOutcome(r, err))
	return snap, err
}

func (a *backend) Release(runID string) { a.next.Release(runID) }

func (a *backend) Get(ctx context.Context, caller signals.Subject, runID string, opts ...runs.ReadOption) (signals.Snapshot, error) {
	snap, err := a.next.Get(ctx, caller, runID, opts...)
	a.refusedRead(caller, runID, err)
	return snap, err
}

func (a *backend) Events(ctx context.Context, caller signals.Subject, runID string, afterSequence int, wait time.Duration) (signals.EventPage, signals.Snapshot, error) {
	page, snap, err := a.next.Events(ctx, caller, runID, afterSequence, wait)
	a.refusedRead(caller, runID, err)
	return page, snap, err
}

// Resolve writes the record of the answer. Its tool is the one of the
// snapshot the caller held (runs.Held) when the answer names none.
func (a *backend) Resolve(ctx context.Context, caller signals.Subject, runID string, r signals.Resolution, opts ...runs.ResolveOption) (signals.Snapshot, error) {
	snap, err := a.next.Resolve(ctx, caller, runID, r, opts...)
	if held, ok := runs.HeldSnapshot(opts...); ok && snap.Tool == "" && held.RunID == runID {
		snap.Tool = held.Tool
	}
	a.answered(caller, runID, r, snap, err)
	return snap, err
}

func (a *backend) Cancel(ctx context.Context, caller signals.Subject, runID, reason string) (signals.Snapshot, error) {
	snap, err := a.next.Cancel(ctx, caller, runID, reason)
	reason = cmp.Or(reason, signals.ReasonCallerRequested)
	a.trail.Write(withOutcome(Record{Action: ActionCancel, RunID: runID, Tool: snap.Tool, Subject: caller, CancelReason: reason}, err))
	return snap, err
}

func (a *backend) Await(ctx context.Context, caller signals.Subject, runID string, done func(signals.Snapshot) bool, opts ...runs.AwaitOption) (signals.Snapshot, error) {
	snap, err := a.next.Await(ctx, caller, runID, done, opts...)
	a.refusedRead(caller, runID, err)
	return snap, err
}

// List is not audited: it lists the caller's own tenant only.
func (a *backend) List(ctx context.Context, caller signals.Subject, req runs.ListRequest) (runs.ListPage, error) {
	return a.next.List(ctx, caller, req)
}

// answered writes the record of a resolution: its interrupt and action,
// never its content.
func (a *backend) answered(caller signals.Subject, runID string, r signals.Resolution, snap signals.Snapshot, err error) {
	rec := Record{Action: ActionAnswer, RunID: runID, Tool: snap.Tool, Subject: caller,
		InterruptID: r.InterruptID, Resolution: r.Action}
	a.trail.Write(withOutcome(rec, err))
}

// refusedRead writes the record of a read refused on authorization grounds;
// reads that pass are not audited.
func (a *backend) refusedRead(caller signals.Subject, runID string, err error) {
	if o, _ := outcome(err); o == OutcomeRefused {
		a.trail.Write(withOutcome(Record{Action: ActionRead, RunID: runID, Subject: caller}, err))
	}
}

// withOutcome sets r's outcome and reason from the operation's error.
func withOutcome(r Record, err error) Record {
	r.Outcome, r.Reason = outcome(err)
	return r
}

// outcome classifies an operation's error by the runs errors. An error
// the run service does not name is "error": its text may quote what the
// caller sent.
func outcome(err error) (Outcome, string) {
	switch {
	case err == nil:
		return OutcomeOK, ""
	case errors.Is(err, runs.ErrTenantMismatch):
		return OutcomeRefused, "tenant-mismatch"
	case errors.Is(err, runs.ErrNotEligible):
		return OutcomeRefused, "not-eligible"
	case errors.As(err, new(*answers.Error)):
		return OutcomeRefused, "invalid-answer"
	case errors.Is(err, runs.ErrNotApplied):
		return OutcomeRecorded, "not-applied"
	case errors.Is(err, runs.ErrNotFound):
		return OutcomeFailed, "not-found"
	case errors.Is(err, runs.ErrTerminal):
		return OutcomeFailed, "terminal"
	case errors.Is(err, runs.ErrExpired):
		return OutcomeFailed, "expired"
	case errors.Is(err, runs.ErrWithdrawn):
		return OutcomeFailed, "withdrawn"
	case errors.Is(err, runs.ErrNotOpen):
		return OutcomeFailed, "not-open"
	case errors.Is(err, runs.ErrAlreadyResolved):
		return OutcomeFailed, "already-resolved"
	case errors.Is(err, runs.ErrSearchAttributesMissing):
		return OutcomeFailed, "search-attributes-missing"
	case errors.Is(err, context.Canceled):
		return OutcomeFailed, "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeFailed, "deadline-exceeded"
	}
	return OutcomeFailed, "error"
}
