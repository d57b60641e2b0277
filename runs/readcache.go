package runs

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/openwop/temporal-mcp/signals"
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
	// busyKeep bounds how long a read of a run that is not terminal is
	// kept when it took longer than the window (readCache.keep).
	busyKeep = 4 * time.Second
	// pollPatienceDiv divides the window into how long a poll waits for
	// a fresh read before it is answered with the last reading held.
	pollPatienceDiv = 5
	// staleLimit is how old a reading may be for a poll to be answered
	// with it while a fresh read is slow (Get with AllowStale).
	staleLimit = 30 * time.Second
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
	// epoch counts the invalidations (drop). dropped holds, for each run
	// dropped within sharedReadTimeout, the epoch of its last drop: a
	// read of that run that was in flight then is not kept, since it may
	// predate the change. drops lists those marks, oldest first, to forget
	// them.
	epoch   uint64
	dropped map[string]uint64
	drops   *list.List // of dropMark
}

// dropMark is one invalidation of a run.
type dropMark struct {
	id    string
	epoch uint64
	at    time.Time
}

// cached is one reading in the cache: fresh until expires, and until
// usable a poll may be answered with it while a fresh read is slow
// (Get with AllowStale).
type cached struct {
	id      string
	r       reading
	size    int
	at      time.Time // when it was kept
	expires time.Time
	usable  time.Time
}

func newReadCache(window time.Duration) *readCache {
	return &readCache{window: window, now: time.Now, entries: map[string]*list.Element{}, order: list.New(),
		dropped: map[string]uint64{}, drops: list.New()}
}

// get returns the reading of id held and still fresh.
func (c *readCache) get(id string) (reading, bool) { return c.lookup(id, true) }

// recent returns the reading of id held, fresh or not, while a poll may
// still be answered with it: for at most staleLimit, and at most bound of
// the reading (nil: staleLimit).
func (c *readCache) recent(id string, bound func(signals.Snapshot) time.Duration) (reading, bool) {
	r, ok := c.lookup(id, false)
	if !ok || bound == nil {
		return r, ok
	}
	c.mu.Lock()
	el, held := c.entries[id]
	var at time.Time
	if held {
		at = el.Value.(*cached).at
	}
	c.mu.Unlock()
	return r, held && c.now().Sub(at) <= min(bound(r.snap), staleLimit)
}

// lookup returns the reading of id held while it is usable, and only
// while it is fresh when fresh is set (a fresh hit counts as a use for the
// eviction order). A reading no longer usable is forgotten.
func (c *readCache) lookup(id string, fresh bool) (reading, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[id]
	if !ok {
		return reading{}, false
	}
	e := el.Value.(*cached)
	now := c.now()
	switch {
	case !now.Before(e.usable):
		c.removeLocked(el)
		return reading{}, false
	case !fresh:
		return e.r, true
	case !now.Before(e.expires):
		return reading{}, false
	}
	c.order.MoveToFront(el)
	return e.r, true
}

// keep returns how long the reading r, which took took to read, may be
// reused: 0 for none. A read that took longer than the window is reused
// as long as it took (up to busyKeep): when Temporal is slow to answer,
// clients that poll a run fast share each read for longer, so what they
// ask of Temporal falls as its latency rises instead of adding to it (a
// fresher answer would have taken as long to come anyway).
func (c *readCache) keep(r reading, took time.Duration) time.Duration {
	var keep time.Duration
	switch {
	case c.window <= 0:
		return 0
	case r.snap.Status.Terminal():
		return terminalKeep
	case r.snap.Status.Waiting() && !r.described:
		keep = waitingWindows * c.window
	default:
		keep = c.window
	}
	return max(keep, min(took, busyKeep))
}

// put keeps the reading r of id, read by a flight that started at epoch
// and took took; not when id was dropped since (a read that took longer
// than sharedReadTimeout is never kept: its drop may be forgotten).
func (c *readCache) put(id string, r reading, epoch uint64, took time.Duration) {
	keep := c.keep(r, took)
	size := r.footprint()
	if keep <= 0 || size > cacheMaxEntry || took >= sharedReadTimeout {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped[id] > epoch {
		return
	}
	if el, ok := c.entries[id]; ok {
		c.removeLocked(el)
	}
	c.addLocked(id, r, size, keep)
}

// seed holds r, what Start knows of the new run id, for polls only: it is
// never fresh, so a Get reads the run, but a poll whose read is slow may
// be answered with it. It does nothing when the cache holds a reading of
// id already.
func (c *readCache) seed(id string, r reading) {
	size := r.footprint()
	if c.window <= 0 || size > cacheMaxEntry {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[id]; !ok {
		c.addLocked(id, r, size, 0)
	}
}

// addLocked adds r as the reading of id, fresh for keep and usable by
// polls for at least staleLimit, and evicts the oldest used readings over
// the bounds.
func (c *readCache) addLocked(id string, r reading, size int, keep time.Duration) {
	now := c.now()
	e := &cached{id: id, r: r, size: size, at: now, expires: now.Add(keep), usable: now.Add(max(keep, staleLimit))}
	c.entries[id] = c.order.PushFront(e)
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
	now := c.now()
	c.dropped[id] = c.epoch
	c.drops.PushBack(dropMark{id: id, epoch: c.epoch, at: now})
	for front := c.drops.Front(); front != nil; front = c.drops.Front() {
		m := front.Value.(dropMark)
		if now.Sub(m.at) < sharedReadTimeout {
			break
		}
		c.drops.Remove(front)
		if c.dropped[m.id] == m.epoch {
			delete(c.dropped, m.id)
		}
	}
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
//
// For a poll (Get with AllowStale), a read that has not answered within a fifth
// of the read window is not waited for when the cache holds a reading of the run that
// is usable (at most staleLimit old, and not dropped since: nothing this
// process changed): that reading answers, and the read goes on to refresh
// it for the next poll.
func (rd *reader) readShared(ctx context.Context, id, tenant string, stale func(signals.Snapshot) time.Duration) (reading, error) {
	if r, ok := rd.reads.get(id); ok {
		return r, nil
	}
	ch := rd.reads.flight.DoChan(id, func() (any, error) {
		epoch := rd.reads.currentEpoch()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedReadTimeout)
		defer cancel()
		start := time.Now()
		r, err := rd.read(rctx, id, tenant)
		if err == nil {
			rd.reads.put(id, r, epoch, time.Since(start))
		}
		return r, err
	})
	var slow <-chan time.Time
	if _, ok := rd.reads.recent(id, stale); stale != nil && ok {
		t := time.NewTimer(rd.reads.window / pollPatienceDiv)
		defer t.Stop()
		slow = t.C
	}
	for {
		select {
		case res := <-ch:
			if res.Err != nil {
				return reading{}, res.Err
			}
			return res.Val.(reading), nil
		case <-slow:
			if r, ok := rd.reads.recent(id, stale); ok {
				return r, nil
			}
			slow = nil
		case <-ctx.Done():
			return reading{}, fmt.Errorf("get run %s: %w", id, ctx.Err())
		}
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
	n += 96 * len(r.snap.Withdrawn)
	for _, e := range r.events {
		n += len(e.Payload) + 192
	}
	return n
}
