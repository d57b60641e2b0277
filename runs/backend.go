package runs

import (
	"context"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// Backend is the run service the protocol front ends (the MCP mount and
// the REST API) operate runs through. *Service is the Temporal backend;
// internal/testing/runstest has an in-memory one for protocol tests.
//
// Every method but Start and Release acts for the given caller and
// reports failures with the Err* values of this package: a run id whose
// tenant segment is not the caller's tenant is ErrTenantMismatch before
// any lookup, a malformed or unknown id ErrNotFound.
//
// The twins of an operation that exist for speed are its options:
// AllowStale (Get), Held (Resolve) and PublishedOnly (Await). A decorator
// passes them on as it got them; a backend that has no faster way ignores
// them. What the edges read only to trace a request (the trace a run was
// started in: Service.StartTrace) is not part of Backend: the assembly
// hands it to them as a function (mcpmount.Options.RunTrace,
// restapi.Options.RunTrace).
type Backend interface {
	// Start starts a run and returns once its workflow exists (an
	// immediate Get resolves). The caller must check that req.Tool names
	// a registered tool, and call Release once the answer that names the
	// run was delivered (or the run cancelled).
	Start(ctx context.Context, req NewRun) (signals.Snapshot, error)
	// Release tells the backend that the caller of Start took the run
	// over: the answer naming it was delivered, or the run was cancelled.
	// A backend that journals the runs not yet handed over (Options.Journal)
	// forgets the run; one that does not does nothing.
	Release(runID string)

	// Get answers getRun: the run's current snapshot (a read; it never
	// changes the run). With AllowStale (a caller that polls the run and
	// will ask again soon: tasks/get, GET /runs/{id}) a backend may answer
	// at once with a recent reading while reading the run anew is slow,
	// never one that the backend's own changes to the run made stale; a
	// read that decides a change (tasks/update) does without it.
	Get(ctx context.Context, caller signals.Subject, runID string, opts ...ReadOption) (signals.Snapshot, error)
	// Events answers pollRunEvents: the events after afterSequence and
	// the run's snapshot. When there are none and wait > 0, it may wait
	// up to wait for the next event or the run's end.
	Events(ctx context.Context, caller signals.Subject, runID string, afterSequence int, wait time.Duration) (signals.EventPage, signals.Snapshot, error)

	// Resolve resolves one open interrupt and returns after the run
	// applied it. An answer that does not fit the question (answers.Check)
	// is refused with an *answers.Error before anything reaches the run.
	// With Held (a caller that read the run in the same request) a
	// backend may check the resolution against that snapshot instead of
	// reading the run again; the answer is the same either way.
	Resolve(ctx context.Context, caller signals.Subject, runID string, r signals.Resolution, opts ...ResolveOption) (signals.Snapshot, error)

	// Cancel requests cancellation of the run with a reason (""
	// means signals.ReasonCallerRequested).
	Cancel(ctx context.Context, caller signals.Subject, runID, reason string) (signals.Snapshot, error)

	// Await blocks until done holds for the run's snapshot or the run is
	// terminal, or ctx ends. done sees every snapshot the run reads as it
	// moves, in order. With PublishedOnly (a caller that needs only what
	// the run publishes: its status, open interrupts and cancel reason)
	// done sees at least every snapshot at which those changed, and a
	// backend may skip the reads of the others.
	Await(ctx context.Context, caller signals.Subject, runID string, done func(signals.Snapshot) bool, opts ...AwaitOption) (signals.Snapshot, error)

	// List lists the caller's tenant's runs, a page at a time
	// (ErrBadCursor for a cursor it did not issue).
	List(ctx context.Context, caller signals.Subject, req ListRequest) (ListPage, error)
}

// Service is the Temporal Backend.
var _ Backend = (*Service)(nil)
