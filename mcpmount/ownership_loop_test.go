package mcpmount

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// TestWireOwnershipLoop repeats the two disconnect cases many times, in
// concurrent batches, and counts the outcomes: every blocking call whose
// socket closed mid-call must leave its run cancelled with
// mcp-request-cancelled, and every task whose CreateTaskResult was read
// before the socket closed must complete.
func TestWireOwnershipLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("loop test")
	}
	const rounds, batch = 50, 10
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	caller := auth.Anonymous()

	t.Run("blocking close mid-call", func(t *testing.T) {
		counts := map[string]int{}
		for done := 0; done < rounds; done += batch {
			conns := make([]net.Conn, batch)
			for i := range conns {
				conns[i] = dialCall(t, s.addr(), toolCall(i+1, "conformance-cancellable",
					map[string]any{"delayMs": 30000}, map[string]any{}, acceptJSON))
			}
			// Every call of the batch has started its run and owns it.
			ids := make([]string, batch)
			for i := range ids {
				ids[i] = p.next(t)
			}
			for _, c := range conns {
				c.Close()
			}
			for _, o := range awaitAll(t, s, caller, ids) {
				counts[o]++
			}
		}
		t.Logf("blocking calls closed mid-call: %d runs, outcomes %v", rounds, counts)
		if counts["cancelled/"+signals.ReasonMCPRequestCancelled] != rounds {
			t.Fatalf("want all %d runs cancelled (%s), got %v", rounds, signals.ReasonMCPRequestCancelled, counts)
		}
	})

	t.Run("task read then close", func(t *testing.T) {
		counts := map[string]int{}
		for done := 0; done < rounds; done += batch {
			ids := make([]string, batch)
			var wg sync.WaitGroup
			errs := make(chan error, batch)
			for i := range ids {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					conn, err := writeCall(s.addr(), toolCall(i+1, "conformance-cancellable",
						map[string]any{"delayMs": 300}, tasksCaps(), acceptJSON))
					if err != nil {
						errs <- err
						return
					}
					r, err := readReply(conn)
					conn.Close() // after the whole response
					if err != nil {
						errs <- err
						return
					}
					taskID, _ := r.Result["taskId"].(string)
					id, perr := runid.Parse(taskID)
					if r.Result["resultType"] != "task" || perr != nil {
						errs <- fmt.Errorf("response = %s", r.Raw)
						return
					}
					ids[i] = id
				}(i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for range ids {
				p.next(t) // drain the probe
			}
			for _, o := range awaitAll(t, s, caller, ids) {
				counts[o]++
			}
		}
		t.Logf("tasks read then closed: %d runs, outcomes %v", rounds, counts)
		if counts["completed/"] != rounds {
			t.Fatalf("want all %d runs completed, got %v", rounds, counts)
		}
	})
}

// awaitAll waits for every run to end and returns "status/cancelReason"
// per run.
func awaitAll(t *testing.T, s *stack, caller signals.Subject, ids []string) []string {
	t.Helper()
	out := make([]string, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			snap, err := s.runs.Await(ctx, caller, id, func(s signals.Snapshot) bool { return s.Status.Terminal() })
			if err != nil {
				out[i] = "error: " + err.Error()
				return
			}
			out[i] = string(snap.Status) + "/" + snap.CancelReason
		}()
	}
	wg.Wait()
	return out
}
