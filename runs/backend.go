package runs

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

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
type Backend interface {
	// Start starts a run and returns once its workflow exists (an
	// immediate Get resolves). The caller must check that req.Tool names
	// a registered tool, and call Release once the answer that names the
	// run was delivered (or the run cancelled).
	Start(ctx context.Context, req StartRequest) (signals.Snapshot, error)
	// Release tells the backend that the caller of Start took the run
	// over: the answer naming it was delivered, or the run was cancelled.
	// A backend that journals the runs not yet handed over (Options.Journal)
	// forgets the run; one that does not does nothing.
	Release(runID string)

	// Get answers getRun: the run's current snapshot (a read; it never
	// changes the run).
	Get(ctx context.Context, caller signals.Subject, runID string) (signals.Snapshot, error)
	// Poll answers getRun for a caller that polls the run and will ask
	// again soon (tasks/get, GET /runs/{id}): as Get, except that a
	// backend may answer at once with a recent reading while reading the
	// run anew is slow, never one that the backend's own changes to the
	// run made stale. A read that decides a change (tasks/update) calls
	// Get.
	Poll(ctx context.Context, caller signals.Subject, runID string) (signals.Snapshot, error)
	// Events answers pollRunEvents: the events after afterSequence and
	// the run's snapshot. When there are none and wait > 0, it may wait
	// up to wait for the next event or the run's end.
	Events(ctx context.Context, caller signals.Subject, runID string, afterSequence int, wait time.Duration) (signals.EventPage, signals.Snapshot, error)
	// StartTrace returns the span context of the request that started the
	// run (invalid when it was not traced, or the backend does not know).
	StartTrace(ctx context.Context, caller signals.Subject, runID string) (trace.SpanContext, error)

	// Resolve resolves one open interrupt and returns after the run
	// applied it. An answer that does not fit the question (CheckAnswer)
	// is refused with an *AnswerError before anything reaches the run.
	Resolve(ctx context.Context, caller signals.Subject, runID string, r signals.Resolution) (signals.Snapshot, error)
	// ResolveHeld is Resolve for a caller that read the run in the same
	// request: held is that snapshot, which a backend may check the
	// resolution against instead of reading the run again. The answer is
	// Resolve's either way.
	ResolveHeld(ctx context.Context, caller signals.Subject, runID string, held signals.Snapshot, r signals.Resolution) (signals.Snapshot, error)

	// Cancel requests cancellation of the run with a reason (""
	// means signals.ReasonCallerRequested).
	Cancel(ctx context.Context, caller signals.Subject, runID, reason string) (signals.Snapshot, error)

	// Await blocks until done holds for the run's snapshot or the run is
	// terminal, or ctx ends. done sees every snapshot the run reads as it
	// moves, in order.
	Await(ctx context.Context, caller signals.Subject, runID string, done func(signals.Snapshot) bool) (signals.Snapshot, error)
	// AwaitPublished is Await for a caller that needs only what the run
	// publishes (its status, open interrupts and cancel reason): done sees
	// at least every snapshot at which those changed, and a backend may
	// skip the reads of the others.
	AwaitPublished(ctx context.Context, caller signals.Subject, runID string, done func(signals.Snapshot) bool) (signals.Snapshot, error)

	// List lists the caller's tenant's runs, a page at a time
	// (ErrBadCursor for a cursor it did not issue).
	List(ctx context.Context, caller signals.Subject, req ListRequest) (ListPage, error)
}

// Service is the Temporal Backend.
var _ Backend = (*Service)(nil)
