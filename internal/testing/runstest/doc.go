// Package runstest is a test double for tests only: an in-memory
// runs.Backend, so that the protocol tests of both transports (mcpmount
// and restapi) run without Temporal. Never use it in a server.
//
// Fake follows the error contract of *runs.Service: the tenant segment of
// a run id is checked before any lookup (ErrTenantMismatch whether or not
// the run exists), a malformed or unknown id is ErrNotFound, and Resolve
// and Cancel answer ErrAlreadyResolved, ErrExpired, ErrWithdrawn (a
// snapshot's Withdrawn), ErrTerminal, ErrNotOpen and ErrNotEligible as the
// service does. It also records what it was asked
// (starts, cancels, resolutions, listings, poll waits) for tests to check,
// and takes hooks that shape its runs. Integration tests use the real
// service instead.
package runstest
