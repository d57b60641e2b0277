package runs

import (
	"errors"
	"fmt"
)

// Errors returned by Service methods. Callers map them to wire errors with
// errors.Is.
var (
	// ErrNotFound: no readable run with that id (unknown, purged, or an id
	// that does not match the runId grammar).
	ErrNotFound = errors.New("run not found")
	// ErrTenantMismatch: the id names another tenant's run (whether or not
	// it exists).
	ErrTenantMismatch = errors.New("run id belongs to another tenant")
	// ErrTerminal: the run is already completed, failed or cancelled.
	ErrTerminal = errors.New("run is terminal")
	// ErrNotEligible: the caller is not an eligible approver of the
	// interrupt.
	ErrNotEligible = errors.New("caller is not an eligible approver")
	// ErrNotOpen: the run has no open interrupt with that id (never issued).
	ErrNotOpen = errors.New("interrupt is not open")
	// ErrExpired: the interrupt's deadline passed before an answer was
	// applied, and the run withdrew it (signals.WithdrawnExpired).
	// errors.Is(err, ErrNotOpen) holds too.
	ErrExpired = fmt.Errorf("%w: it expired", ErrNotOpen)
	// ErrWithdrawn: the run withdrew the interrupt without an answer
	// (signals.WithdrawnByRun): it no longer waits for it.
	// errors.Is(err, ErrNotOpen) holds too.
	ErrWithdrawn = fmt.Errorf("%w: the run withdrew it", ErrNotOpen)
	// ErrAlreadyResolved: the interrupt was resolved already, by an earlier
	// or a concurrent resolution.
	ErrAlreadyResolved = errors.New("interrupt already resolved")
	// ErrBadCursor: a List cursor that this service did not issue.
	ErrBadCursor = errors.New("invalid cursor")
	// ErrNotApplied: the resolution was recorded with the run (its signal
	// was accepted), but no worker answered to apply it: none serves the
	// run's task queue now. The run applies it, if it is still the first
	// eligible one, when a worker serves the queue again; sending it again
	// is harmless (a run applies one resolution per interrupt).
	ErrNotApplied = errors.New("resolution recorded; no worker serves the run to apply it yet")
)
