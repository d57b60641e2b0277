package runs

import (
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// A ReadOption changes how Backend.Get reads a run.
type ReadOption struct {
	stale bool
	// within bounds the age of a stale reading (nil: staleLimit).
	within func(signals.Snapshot) time.Duration
	// known, when set, tells whether a reading held knows enough of the
	// run's questions (Showing, AskingAt).
	known func(signals.Snapshot) bool
}

// AllowStale is the ReadOption of a caller that polls the run and will
// ask again soon (tasks/get, GET /runs/{id}). When the run's read has not
// answered within a fifth of the read window (Options.ReadWindow: Temporal
// is loaded) and the service holds a reading of the run at most 30 s old,
// that reading answers at once, and the read goes on to refresh it for
// the next poll. It is never a reading that a change this process made to
// the run (an answer, a cancel) left stale, nor one older than a fresh
// reading already answered.
func AllowStale() ReadOption { return ReadOption{stale: true} }

// AllowStaleWithin is AllowStale with a reading at most within(reading)
// old (and never over 30 s): a caller that told its client how often to
// poll (a task's pollIntervalMs) passes that interval, so that no answer
// is older than the client's last poll.
func AllowStaleWithin(within func(signals.Snapshot) time.Duration) ReadOption {
	return ReadOption{stale: true, within: within}
}

// Showing is the ReadOption of a caller about to answer the interrupts
// ids (tasks/update, an elicitation's answer, an MRTR retry): a reading
// held that knows one of them neither open nor resolved, and the run not
// ended, may predate its question (a run that asked again since, which
// the caller learned of elsewhere: another replica, a follow of the run's
// history), so the run is read anew, and that reading answers. An answer
// to a question the run just asked is then applied, not taken for an
// answer to nothing.
func Showing(ids ...string) ReadOption {
	return ReadOption{known: func(snap signals.Snapshot) bool { return shows(snap, ids) }}
}

// AskingAt is Showing for a caller that names a question by its node
// (REST): a reading with no question open at nodeID, the run not ended,
// is followed by one read anew.
func AskingAt(nodeID string) ReadOption {
	return ReadOption{known: func(snap signals.Snapshot) bool {
		if snap.Status.Terminal() {
			return true
		}
		for _, it := range snap.Interrupts {
			if it.NodeID == nodeID {
				return true
			}
		}
		return false
	}}
}

// knownOf is the test of the Showing and AskingAt options of opts: true
// for a reading every one of them accepts.
func knownOf(opts []ReadOption) func(signals.Snapshot) bool {
	var tests []func(signals.Snapshot) bool
	for _, o := range opts {
		if o.known != nil {
			tests = append(tests, o.known)
		}
	}
	return func(snap signals.Snapshot) bool {
		for _, ok := range tests {
			if !ok(snap) {
				return false
			}
		}
		return true
	}
}

// shows reports whether snap knows every interrupt of ids, open,
// resolved or withdrawn, or the run ended (no question can be asked any more).
func shows(snap signals.Snapshot, ids []string) bool {
	if snap.Status.Terminal() {
		return true
	}
	for _, id := range ids {
		if _, open := snap.Interrupt(id); open {
			continue
		}
		_, done := snap.ResolvedBy(id)
		if _, gone := snap.WithdrawnAs(id); !done && !gone {
			return false
		}
	}
	return true
}

// staleBound is how old a stale reading may answer a Get with opts: 0 when
// none may (no AllowStale).
func staleBound(opts []ReadOption) func(signals.Snapshot) time.Duration {
	var bound func(signals.Snapshot) time.Duration
	for _, o := range opts {
		switch {
		case o.within != nil:
			bound = o.within
		case o.stale && bound == nil:
			bound = func(signals.Snapshot) time.Duration { return staleLimit }
		}
	}
	return bound
}

// A ResolveOption changes how Backend.Resolve checks a resolution.
type ResolveOption struct {
	held *signals.Snapshot
}

// Held is the ResolveOption of a caller that read the run (Get) in the
// same request: the interrupt's openness and the caller's eligibility are
// checked against snap instead of a new read, so the resolution costs the
// signal and the query that confirms it. The run applies a resolution only
// when it is still the first eligible one of an open interrupt, so a held
// snapshot that went stale in between yields ErrAlreadyResolved or
// ErrTerminal, as without it. A held snapshot of another run or tenant is
// ignored (the run is read again).
func Held(snap signals.Snapshot) ResolveOption { return ResolveOption{held: &snap} }

// HeldSnapshot returns the snapshot of the last Held option in opts, and
// whether there is one (a decorator of Backend may need what the caller
// read).
func HeldSnapshot(opts ...ResolveOption) (signals.Snapshot, bool) {
	for i := len(opts) - 1; i >= 0; i-- {
		if h := opts[i].held; h != nil {
			return *h, true
		}
	}
	return signals.Snapshot{}, false
}

// An AwaitOption changes what Backend.Await shows its done function.
type AwaitOption struct {
	published bool
}

// PublishedOnly is the AwaitOption of a caller that needs only what a run
// publishes: its status, open interrupts and cancel reason. done sees the
// snapshots at which those changed, and getRun is asked only then: after a
// workflow task that upserted the run's status search attribute or its
// published state (signals.MemoState), not after every workflow task. The
// callers that wait so on one run at the same time share one follower
// (one history long poll, one query per change); a caller that joins a
// follower already running sees the latest snapshot it read first.
func PublishedOnly() AwaitOption { return AwaitOption{published: true} }

// publishedOnly reports whether opts hold PublishedOnly.
func publishedOnly(opts []AwaitOption) bool {
	for _, o := range opts {
		if o.published {
			return true
		}
	}
	return false
}
