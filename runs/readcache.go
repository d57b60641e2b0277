package runs

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Bounds of the read cache (Options.ReadWindow).
const (
	// DefaultReadWindow is how long a read of a working run is reused
	// (Options.ReadWindow).
	DefaultReadWindow = 250 * time.Millisecond
	// waitingWindows is how many read windows a read of a run that waits
	// (for a human, an external event) is reused: such a run changes when
	// it is answered, which this process learns of when it is the one that
	// answers (Resolve drops what it holds).
	waitingWindows = 4
	// terminalKeep is how long a terminal run's read is kept: it never
	// changes.
	terminalKeep = 5 * time.Minute
	// cacheEntries and cacheBytes bound what the cache holds, whatever
	// the number of runs read; a reading larger than cacheMaxEntry is not
	// kept.
	cacheEntries  = 4096
	cacheBytes    = 16 << 20
	cacheMaxEntry = 1 << 20
	// sharedReadTimeout bounds a read that several callers share; it runs
	// detached from the caller that started it, so that this caller
	// leaving does not fail the others.
	sharedReadTimeout = 30 * time.Second
	// entryOverhead is what a cached reading costs beyond the bytes of
	// its variable-length fields.
	entryOverhead = 512
)

// readCache holds recent readings of runs for Get: concurrent reads of a
// run share one Temporal read (singleflight), and a reading is reused for a
// short window (longer for a waiting run, until evicted for a terminal
// one). It is bounded in entries and bytes; the oldest used entry goes
// first.
type readCache struct {
	window time.Duration // <= 0: nothing is kept (reads are still shared)
	now    func() time.Time
	flight singleflight.Group

	mu      sync.Mutex
	entries map[string]*list.Element
	order   *list.List // of *cached, most recently used first
	bytes   int
	// epoch counts the invalidations: a read that was in flight when one
	// happened is not kept, since it may predate the change.
	epoch uint64
}

// cached is one reading in the cache.
type cached struct {
	id      string
	r       reading
	size    int
	expires time.Time
}

func newReadCache(window time.Duration) *readCache {
	return &readCache{window: window, now: time.Now, entries: map[string]*list.Element{}, order: list.New()}
}

// get returns the reading of id held and still fresh.
func (c *readCache) get(id string) (reading, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[id]
	if !ok {
		return reading{}, false
	}
	e := el.Value.(*cached)
	if !c.now().Before(e.expires) {
		c.removeLocked(el)
		return reading{}, false
	}
	c.order.MoveToFront(el)
	return e.r, true
}

// keep returns how long the reading r may be reused: 0 for none.
func (c *readCache) keep(r reading) time.Duration {
	switch {
	case c.window <= 0:
		return 0
	case r.snap.Status.Terminal():
		return terminalKeep
	case r.snap.Status.Waiting() && !r.described:
		return waitingWindows * c.window
	}
	return c.window
}

// put keeps the reading r of id, read by a flight that started at epoch.
func (c *readCache) put(id string, r reading, epoch uint64) {
	keep := c.keep(r)
	size := r.footprint()
	if keep <= 0 || size > cacheMaxEntry {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch {
		return
	}
	if el, ok := c.entries[id]; ok {
		c.removeLocked(el)
	}
	c.entries[id] = c.order.PushFront(&cached{id: id, r: r, size: size, expires: c.now().Add(keep)})
	c.bytes += size
	for c.order.Len() > cacheEntries || c.bytes > cacheBytes {
		c.removeLocked(c.order.Back())
	}
}

// drop forgets what is held of id, and makes the reads in flight not kept.
func (c *readCache) drop(id string) {
	c.flight.Forget(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if el, ok := c.entries[id]; ok {
		c.removeLocked(el)
	}
}

func (c *readCache) removeLocked(el *list.Element) {
	e := c.order.Remove(el).(*cached)
	delete(c.entries, e.id)
	c.bytes -= e.size
}

// currentEpoch returns the invalidation count.
func (c *readCache) currentEpoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// readShared is read for Get and the first read of Resolve: a reading of
// the run held by the cache and still fresh, or the result of one read that
// every concurrent caller shares. A caller whose ctx ends stops waiting; the
// shared read goes on for the others (at most sharedReadTimeout).
func (s *Service) readShared(ctx context.Context, id, tenant string) (reading, error) {
	if r, ok := s.reads.get(id); ok {
		return r, nil
	}
	ch := s.reads.flight.DoChan(id, func() (any, error) {
		epoch := s.reads.currentEpoch()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedReadTimeout)
		defer cancel()
		r, err := s.read(rctx, id, tenant)
		if err == nil {
			s.reads.put(id, r, epoch)
		}
		return r, err
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return reading{}, res.Err
		}
		return res.Val.(reading), nil
	case <-ctx.Done():
		return reading{}, fmt.Errorf("get run %s: %w", id, ctx.Err())
	}
}

// footprint estimates the memory r holds: a fixed overhead and the bytes of
// the fields whose length the run decides (content, outputs, interrupts,
// events).
func (r reading) footprint() int {
	n := entryOverhead + len(r.snap.Outputs)
	if res := r.snap.Result; res != nil {
		n += len(res.StructuredContent)
		for _, c := range res.Content {
			n += len(c.Text) + 32
		}
	}
	for _, it := range r.snap.Interrupts {
		n += len(it.Title) + len(it.Description) + len(it.Schema) + 256
	}
	for _, res := range r.snap.Resolved {
		n += len(res.Content) + 128
	}
	for _, e := range r.events {
		n += len(e.Payload) + 192
	}
	return n
}
