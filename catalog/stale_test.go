package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
)

// gatedClient is a real Temporal client whose visibility listings (the
// catalog's readings) are counted and, while the gate is closed, held.
type gatedClient struct {
	client.Client
	mu    sync.Mutex
	lists int           // started
	done  int           // returned
	gate  chan struct{} // nil: open
}

func (c *gatedClient) ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	c.mu.Lock()
	c.lists++
	gate := c.gate
	c.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer func() {
		c.mu.Lock()
		c.done++
		c.mu.Unlock()
	}()
	return c.Client.ListWorkflow(ctx, req)
}

// idle reports whether no listing is under way, and how many started.
func (c *gatedClient) idle() (bool, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lists == c.done, c.lists
}

func (c *gatedClient) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lists
}

func (c *gatedClient) close() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gate = make(chan struct{})
	return c.gate
}

func (c *gatedClient) open() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.gate)
	c.gate = nil
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// within runs f and fails unless it returns within d (a request that waits
// for a held reading never returns).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s waited for the catalog reading", what)
	}
}

// A stale view (older than MaxAge, younger than five MaxAges) is answered
// at once while one background reading replaces it; an older view, and a
// name the stale view does not know, wait for a reading.
func TestLiveAnswersStaleViewWhileReading(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	tq := testenv.UniqueTaskQueue(t)
	name := unique("stale")
	gc := &gatedClient{Client: env.Client}
	clk := &clock{now: time.Now()}
	// The clock stands still but for the advances below, which add up to
	// 3.5 s: the worker's heartbeats, sent on the real clock, stay younger
	// than the 8 s after which the catalog judges a worker dead.
	const maxAge = 250 * time.Millisecond
	live, err := catalog.NewLive(gc, catalog.LiveOptions{MaxAge: maxAge, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	w := runWorker(t, env.Client, newRegistry(t, echoTool(name, "Echo the text.", "w")), tq, "")
	eventually(t, waitBound, "the worker's tool found", func() (bool, string) {
		if err, done := w.failedEarly(); done {
			t.Fatalf("Run returned early: %v", err)
		}
		if err := live.Refresh(ctx); err != nil {
			return false, err.Error()
		}
		_, err := live.Lookup(ctx, name)
		return err == nil, fmt.Sprintf("Lookup: %v", err)
	})

	// Stale: answered from the view while the background reading is held.
	clk.advance(2 * maxAge)
	before := gc.count()
	gc.close()
	within(t, 10*time.Second, "a lookup on a stale view", func() {
		if _, err := live.Lookup(ctx, name); err != nil {
			t.Errorf("Lookup on a stale view = %v", err)
		}
		if _, err := live.Tools(ctx); err != nil {
			t.Errorf("Tools on a stale view = %v", err)
		}
	})
	eventually(t, waitBound, "one background reading started", func() (bool, string) {
		return gc.count() == before+1, ""
	})
	gc.open()
	eventually(t, waitBound, "the background reading done", func() (bool, string) {
		idle, n := gc.idle()
		return idle && n == before+1, ""
	})
	if _, err := live.Lookup(ctx, name); err != nil || gc.count() != before+1 {
		t.Fatalf("Lookup after the background reading = %v with %d readings, want the fresh view", err, gc.count()-before)
	}

	// A name the stale view does not know is read again at once.
	clk.advance(2 * maxAge)
	before = gc.count()
	if _, err := live.Lookup(ctx, unique("missing")); !errors.Is(err, catalog.ErrUnknownTool) {
		t.Fatalf("Lookup of an unknown tool = %v", err)
	}
	if gc.count() == before {
		t.Fatalf("an unknown name on a stale view was not read again (%d readings)", gc.count())
	}

	// Too old: the lookup waits for the reading.
	clk.advance(10 * maxAge)
	before = gc.count()
	if _, err := live.Lookup(ctx, name); err != nil {
		t.Fatal(err)
	}
	if gc.count() != before+1 {
		t.Fatalf("%d readings on a view ten MaxAges old, want 1", gc.count()-before)
	}
}
