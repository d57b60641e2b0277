package runs

import (
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// clockCache is a read cache whose clock the test moves.
func clockCache(window time.Duration) (*readCache, *time.Time) {
	c := newReadCache(window)
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	return c, &now
}

func readingOf(status signals.Status) reading {
	return reading{snap: signals.Snapshot{RunID: "t/r", Status: status}}
}

// TestReadCacheDropIsPerRun: dropping one run leaves the reads of the
// others in flight to be kept (a drop used to void every read in flight,
// so under concurrent answers no read was ever kept), while a read of the
// run dropped meanwhile is not.
func TestReadCacheDropIsPerRun(t *testing.T) {
	c, _ := clockCache(time.Minute)
	epoch := c.currentEpoch()
	c.drop("t/b")
	c.put("t/a", readingOf(signals.StatusRunning), epoch, 0)
	if _, ok := c.get("t/a"); !ok {
		t.Fatal("a read of t/a in flight while t/b was dropped was not kept")
	}
	epoch = c.currentEpoch()
	c.drop("t/a")
	c.put("t/a", readingOf(signals.StatusRunning), epoch, 0)
	if _, ok := c.get("t/a"); ok {
		t.Fatal("a read of t/a in flight while t/a was dropped was kept")
	}
	// A read that started after the drop is kept.
	c.put("t/a", readingOf(signals.StatusRunning), c.currentEpoch(), 0)
	if _, ok := c.get("t/a"); !ok {
		t.Fatal("a read of t/a that started after its drop was not kept")
	}
}

// TestReadCacheDropMarksForgotten: the marks of drops are forgotten once
// no read that predates them can still be in flight.
func TestReadCacheDropMarksForgotten(t *testing.T) {
	c, now := clockCache(time.Minute)
	for _, id := range []string{"t/a", "t/b", "t/c"} {
		c.drop(id)
	}
	*now = now.Add(sharedReadTimeout)
	c.drop("t/d")
	if len(c.dropped) != 1 || c.drops.Len() != 1 {
		t.Fatalf("after %s the cache still marks %d runs dropped (%d marks), want 1", sharedReadTimeout, len(c.dropped), c.drops.Len())
	}
}

// TestReadCacheKeep: how long a reading answers Get, and how long a poll.
func TestReadCacheKeep(t *testing.T) {
	const w = 250 * time.Millisecond
	for _, tc := range []struct {
		name   string
		status signals.Status
		took   time.Duration
		fresh  time.Duration // answers Get this long
		usable time.Duration // answers a poll this long
	}{
		{"working, fast read", signals.StatusRunning, 5 * time.Millisecond, w, staleLimit},
		{"waiting, fast read", signals.StatusWaitingApproval, 5 * time.Millisecond, waitingWindows * w, staleLimit},
		{"working, read took 2 s", signals.StatusRunning, 2 * time.Second, 2 * time.Second, staleLimit},
		{"working, read took 30 s", signals.StatusRunning, sharedReadTimeout, 0, 0}, // as long as sharedReadTimeout: not kept
		{"working, read took 10 s", signals.StatusRunning, 10 * time.Second, busyKeep, staleLimit},
		{"terminal", signals.StatusCompleted, time.Millisecond, terminalKeep, terminalKeep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, now := clockCache(w)
			start := *now
			c.put("t/r", readingOf(tc.status), c.currentEpoch(), tc.took)
			at := func(d time.Duration) (fresh, usable bool) {
				*now = start.Add(d)
				_, fresh = c.get("t/r")
				_, usable = c.recent("t/r", nil)
				return
			}
			if tc.fresh > 0 {
				if fresh, _ := at(tc.fresh - time.Millisecond); !fresh {
					t.Errorf("not fresh just before %s", tc.fresh)
				}
			}
			if tc.usable > 0 {
				if _, usable := at(tc.usable - time.Millisecond); !usable {
					t.Errorf("not usable by a poll just before %s", tc.usable)
				}
			}
			if tc.fresh < tc.usable {
				if fresh, _ := at(tc.fresh); fresh {
					t.Errorf("still fresh at %s", tc.fresh)
				}
			}
			if _, usable := at(tc.usable); usable {
				t.Errorf("still usable by a poll at %s", tc.usable)
			}
		})
	}
}

// TestReadCacheSeed: what Start knows of a new run answers polls only,
// and never replaces a reading.
func TestReadCacheSeed(t *testing.T) {
	c, _ := clockCache(time.Minute)
	c.seed("t/r", readingOf(signals.StatusPending))
	if _, ok := c.get("t/r"); ok {
		t.Fatal("a seeded reading answers Get")
	}
	if r, ok := c.recent("t/r", nil); !ok || r.snap.Status != signals.StatusPending {
		t.Fatalf("a seeded reading does not answer a poll: %v %v", r.snap.Status, ok)
	}
	c.put("t/r", readingOf(signals.StatusWaitingApproval), c.currentEpoch(), 0)
	c.seed("t/r", readingOf(signals.StatusPending))
	if r, ok := c.get("t/r"); !ok || r.snap.Status != signals.StatusWaitingApproval {
		t.Fatalf("a seed replaced a reading: %v %v", r.snap.Status, ok)
	}
}

// TestReadCacheRecentWithin: a poll's stale reading is bounded by what its
// caller allows for that reading (a task's poll interval), and never by
// more than staleLimit.
func TestReadCacheRecentWithin(t *testing.T) {
	c, now := clockCache(time.Second)
	c.put("t/r", readingOf(signals.StatusRunning), c.currentEpoch(), time.Millisecond)
	within := func(d time.Duration) func(signals.Snapshot) time.Duration {
		return func(signals.Snapshot) time.Duration { return d }
	}
	for _, tc := range []struct {
		name  string
		age   time.Duration
		bound func(signals.Snapshot) time.Duration
		want  bool
	}{
		{"no bound, young", 2 * time.Second, nil, true},
		{"within the interval", 2 * time.Second, within(3 * time.Second), true},
		{"older than the interval", 2 * time.Second, within(time.Second), false},
		{"an interval over the limit", staleLimit + time.Second, within(time.Hour), false},
	} {
		at := *now
		*now = at.Add(tc.age)
		if _, ok := c.recent("t/r", tc.bound); ok != tc.want {
			t.Errorf("%s: recent = %v, want %v", tc.name, ok, tc.want)
		}
		*now = at
	}
}
