package runs

import (
	"context"
	"slices"
	"sync"

	"github.com/openwop/temporal-mcp/signals"
)

// watchBacklog is how many of its latest snapshots a shared follower keeps
// for the callers that have not seen them yet; one that falls further
// behind skips to the oldest kept.
const watchBacklog = 16

// watches shares one follower of a run (one history long poll) among the
// AwaitPublished callers of that run in this process. A follower exists
// while a caller waits on it.
type watches struct {
	mu sync.Mutex
	m  map[string]*watch
}

// watch is one shared follower: the snapshots it read so far (the latest
// watchBacklog of them), and how it ended.
type watch struct {
	cancel context.CancelFunc

	mu      sync.Mutex
	callers int
	log     []signals.Snapshot // the latest snapshots read, oldest first
	next    int                // the number of snapshots read so far
	changed chan struct{}      // closed when a snapshot is read or the follower ends
	ended   bool
	err     error
}

// awaitShared is AwaitPublished for a run id of tenant already authorized:
// it waits on the run's shared follower, starting one if none runs.
func (s *Service) awaitShared(ctx context.Context, id, tenant string, done func(signals.Snapshot) bool) (signals.Snapshot, error) {
	w, cursor := s.watches.join(ctx, s, id, tenant)
	defer s.watches.leave(id, w)
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

// join returns the run's follower, started on a context detached from
// ctx's cancellation when none runs, and the number of the first snapshot
// the caller sees: the latest one the follower read (a caller that joins
// late sees the run's state now, not its past).
func (ws *watches) join(ctx context.Context, s *Service, id, tenant string) (*watch, int) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w, ok := ws.m[id]; ok {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.callers++
		return w, max(w.next-1, 0)
	}
	if ws.m == nil {
		ws.m = map[string]*watch{}
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &watch{cancel: cancel, callers: 1, changed: make(chan struct{})}
	ws.m[id] = w
	go func() {
		_, err := s.await(wctx, id, tenant, followPublished, func(snap signals.Snapshot) bool {
			w.read(snap)
			return false
		})
		// A follower that ended is not joined again.
		ws.mu.Lock()
		if ws.m[id] == w {
			delete(ws.m, id)
		}
		ws.mu.Unlock()
		w.end(err)
	}()
	return w, 0
}

// leave is the end of a caller's wait; the last caller stops the follower.
func (ws *watches) leave(id string, w *watch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w.mu.Lock()
	w.callers--
	last := w.callers == 0
	w.mu.Unlock()
	if !last {
		return
	}
	if ws.m[id] == w {
		delete(ws.m, id)
	}
	w.cancel()
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
