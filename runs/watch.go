package runs

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/openwop/temporal-mcp/signals"
)

// watchBacklog is how many of its latest snapshots a shared follower keeps
// for the callers that have not seen them yet; one that falls further
// behind skips to the oldest kept.
const watchBacklog = 16

// watches shares one follower of a run (one history long poll) among the
// callers of Await with PublishedOnly on that run in this process. The first caller
// follows the run in its own goroutine (a blocking call, the usual case,
// waits alone and costs no goroutine switch) and shares what it reads; if
// it stops while others still wait, a follower goroutine takes over for
// them. A watch exists while a caller waits on it.
type watches struct {
	mu sync.Mutex
	m  map[string]*watch
}

// watch is one shared follower: the snapshots it read so far (the latest
// watchBacklog of them), and how it ended.
type watch struct {
	cancel context.CancelFunc // the follower goroutine's, once one took over

	mu      sync.Mutex
	callers int
	log     []signals.Snapshot // the latest snapshots read, oldest first
	next    int                // the number of snapshots read so far
	changed chan struct{}      // closed when a snapshot is read or the follower ends
	ended   bool
	err     error
}

// awaitShared is Await with PublishedOnly for a run id of tenant already authorized:
// it follows the run itself when no one else does, and otherwise waits on
// the run's shared follower.
func (rd *reader) awaitShared(ctx context.Context, id, tenant string, done func(signals.Snapshot) bool) (signals.Snapshot, error) {
	w, cursor, lead := rd.watches.join(id)
	if lead {
		return rd.lead(ctx, w, id, tenant, done)
	}
	defer rd.watches.leave(id, w)
	var last signals.Snapshot
	for {
		w.mu.Lock()
		first := w.next - len(w.log)
		pending := slices.Clone(w.log[max(cursor, first)-first:])
		cursor = w.next
		ended, err, changed := w.ended, w.err, w.changed
		w.mu.Unlock()
		for _, snap := range pending {
			last = snap
			if done(snap) || snap.Status.Terminal() {
				return snap, nil
			}
		}
		if ended {
			return last, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return last, ctx.Err()
		}
	}
}

// lead follows the run in the caller's goroutine for w, sharing every
// snapshot it reads, until done holds for the caller, the run ends or ctx
// ends; then hands w on (handOff).
func (rd *reader) lead(ctx context.Context, w *watch, id, tenant string, done func(signals.Snapshot) bool) (signals.Snapshot, error) {
	snap, err := rd.await(ctx, id, tenant, followPublished, func(snap signals.Snapshot) bool {
		w.read(snap)
		return done(snap)
	})
	// The caller's own end (its context, its deadline) is not the run's:
	// the callers still waiting follow on. The run's end, or a failure to
	// follow it, ends everyone's wait.
	own := ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)
	final := err == nil && snap.Status.Terminal() || err != nil && !own
	rd.watches.handOff(ctx, rd, id, tenant, w, final, err)
	return snap, err
}

// join counts the caller in on the run's watch and returns it, with the
// number of the first snapshot the caller sees (the latest one read: a
// caller that joins late sees the run's state now, not its past), or
// makes a new watch the caller leads (lead is true).
func (ws *watches) join(id string) (w *watch, cursor int, lead bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w, ok := ws.m[id]; ok {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.callers++
		return w, max(w.next-1, 0), false
	}
	if ws.m == nil {
		ws.m = map[string]*watch{}
	}
	w = &watch{callers: 1, changed: make(chan struct{})}
	ws.m[id] = w
	return w, 0, true
}

// handOff is the end of the leader's wait on w. When the run's following
// ended (final) or no one else waits, w ends with err; otherwise a
// follower goroutine, on a context detached from ctx's cancellation,
// follows the run on for the callers still waiting.
func (ws *watches) handOff(ctx context.Context, rd *reader, id, tenant string, w *watch, final bool, err error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if others := ws.depart(id, w); final || !others {
		ws.forget(id, w)
		w.end(err)
		return
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.cancel = cancel
	go func() {
		_, err := rd.await(fctx, id, tenant, followPublished, func(snap signals.Snapshot) bool {
			w.read(snap)
			return false
		})
		// A follower that ended is not joined again.
		ws.mu.Lock()
		ws.forget(id, w)
		ws.mu.Unlock()
		w.end(err)
	}()
}

// leave is the end of a waiting caller's wait; the last one stops the
// follower goroutine.
func (ws *watches) leave(id string, w *watch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.depart(id, w) {
		return
	}
	if w.cancel != nil {
		w.cancel()
	}
}

// depart counts a caller out of w and reports whether others still wait
// on it; the last one's departure forgets w. ws.mu is held.
func (ws *watches) depart(id string, w *watch) (others bool) {
	w.mu.Lock()
	w.callers--
	others = w.callers > 0
	w.mu.Unlock()
	if !others {
		ws.forget(id, w)
	}
	return others
}

// forget removes w from the run's watches, unless another watch took its
// place (a follower that ended is not joined again). ws.mu is held.
func (ws *watches) forget(id string, w *watch) {
	if ws.m[id] == w {
		delete(ws.m, id)
	}
}

// read records a snapshot the follower read and wakes the callers.
func (w *watch) read(snap signals.Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.log) == watchBacklog {
		w.log = append(w.log[:0], w.log[1:]...)
	}
	w.log = append(w.log, snap)
	w.next++
	close(w.changed)
	w.changed = make(chan struct{})
}

// end records how the follower ended and wakes the callers.
func (w *watch) end(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended, w.err = true, err
	close(w.changed)
	w.changed = make(chan struct{})
}
