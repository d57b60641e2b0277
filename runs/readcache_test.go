package runs_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// TestReadsShared pins the Temporal calls of the read cache: concurrent
// Gets of one run make one query, Gets within the window none, this
// service's own Resolve and Cancel drop what it holds (the next Get sees
// the change), and a terminal run read once is answered without a call.
// The window is long so that nothing here depends on timing.
func TestReadsShared(t *testing.T) {
	_, log, tq, c := countedSetup(t)
	s := runs.New(c, nil, runs.Options{TaskQueue: tq, ReadWindow: time.Minute})
	ctx := ctxT(t)
	startWaiting := func() signals.Snapshot {
		t.Helper()
		snap, err := s.Start(ctx, runs.NewRun{Tool: signals.ToolSpec{Name: "conformance-approval"},
			Arguments: json.RawMessage(`{}`), Caller: alice, Transport: signals.TransportMCP})
		if err != nil {
			t.Fatal(err)
		}
		if snap, err = s.Await(ctx, alice, snap.RunID, waitingApproval); err != nil {
			t.Fatal(err)
		}
		return snap
	}
	id := startWaiting().RunID

	const n = 16
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	calls := log.during(id, func() {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				snap, err := s.Get(ctx, bob, id)
				if err == nil && len(snap.Interrupts) != 1 {
					err = errNoInterrupt
				}
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}()
		}
		wg.Wait()
	})
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Get: %v", err)
		}
	}
	wantCalls(t, "16 concurrent Gets of a waiting run", calls, callQuery)
	held, err := s.Get(ctx, bob, id)
	wantNoCalls(t, "a Get within the window", log.during(id, func() { held, err = s.Get(ctx, bob, id) }))
	if err != nil {
		t.Fatal(err)
	}

	// The own resolution replaces what is held by the read that confirmed
	// it: the next Get sees the answer without a call.
	accept := signals.Resolution{InterruptID: held.Interrupts[0].ID, Action: signals.ActionAccept,
		Content: json.RawMessage(`{"action":"accept"}`)}
	if _, err := s.Resolve(ctx, bob, id, accept); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	var after signals.Snapshot
	wantNoCalls(t, "a Get after the own Resolve", log.during(id, func() { after, err = s.Get(ctx, bob, id) }))
	if _, ok := after.ResolvedBy(accept.InterruptID); err != nil || !ok {
		t.Fatalf("Get after Resolve = %+v, %v: the resolution is not seen", after, err)
	}

	// A terminal run: read once (by a service that holds nothing of it),
	// then answered from what is held.
	if _, err := s.Await(ctx, alice, id, terminal); err != nil {
		t.Fatal(err)
	}
	fresh := runs.New(c, nil, runs.Options{TaskQueue: tq, ReadWindow: time.Minute})
	if _, err := fresh.Get(ctx, alice, id); err != nil {
		t.Fatal(err)
	}
	var final signals.Snapshot
	wantNoCalls(t, "Gets of a terminal run read before", log.during(id, func() {
		for range 3 {
			if final, err = fresh.Get(ctx, alice, id); err != nil {
				t.Fatal(err)
			}
		}
	}))
	if final.Status != signals.StatusCompleted || final.Result == nil {
		t.Fatalf("terminal Get = %+v", final)
	}

	// The own Cancel drops what is held: the next Get reads the run again.
	other := startWaiting().RunID
	if _, err := s.Get(ctx, alice, other); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, alice, other, ""); err != nil {
		t.Fatal(err)
	}
	var cancelled signals.Snapshot
	calls = log.during(other, func() { cancelled, err = s.Get(ctx, alice, other) })
	if len(calls) == 0 || err != nil || cancelled.Status == signals.StatusWaitingApproval {
		t.Fatalf("Get after the own Cancel made the calls %v and read %s, %v: want a new read", calls, cancelled.Status, err)
	}
}

// errNoInterrupt is a Get of a waiting run that lists no interrupt.
var errNoInterrupt = errors.New("the waiting run lists no open interrupt")

func wantNoCalls(t *testing.T, what string, got []string) {
	t.Helper()
	if len(got) != 0 {
		t.Errorf("%s made the Temporal calls %v, want none", what, got)
	}
}
