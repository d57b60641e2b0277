package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestSlotsOrder holds the one slot, queues callers of both ranks in the
// order given, frees the slot again and again, and wants the slots given
// in the order stated: calls on runs first, a start at least every
// startShare+1-th slot.
func TestSlotsOrder(t *testing.T) {
	S, R := rankStart, rankRun
	for _, tc := range []struct {
		name  string
		queue []callRank
		want  []int // indexes into queue, in the order served
	}{
		{"runs before starts", []callRank{S, R, R}, []int{1, 2, 0}},
		{"each rank in its order", []callRank{S, S, R, R}, []int{2, 3, 0, 1}},
		{"only starts", []callRank{S, S}, []int{0, 1}},
		{"a start every fourth slot", []callRank{S, R, R, R, R, R}, []int{1, 2, 3, 0, 4, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSlots(1)
			ctx := context.Background()
			release, err := s.take(ctx, rankRun)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var served []int
			done := make(chan func(), len(tc.queue))
			for i, r := range tc.queue {
				go func() {
					give, err := s.take(ctx, r)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					served = append(served, i)
					mu.Unlock()
					done <- give
				}()
				waitQueued(t, s, r, count(tc.queue[:i+1], r))
			}
			for range tc.queue {
				release()
				select {
				case release = <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("a slot freed reached no waiter; served %v", served)
				}
			}
			release()
			if !slices.Equal(served, tc.want) {
				t.Errorf("served %v, want %v", served, tc.want)
			}
			if s.free != 1 {
				t.Errorf("free slots at the end = %d, want 1", s.free)
			}
		})
	}
}

// TestSlotsCancelledWaiter: a waiter whose context ends leaves the queue
// with its context's error, and the slot freed next is free again.
func TestSlotsCancelledWaiter(t *testing.T) {
	for _, r := range []callRank{rankRun, rankStart} {
		t.Run(fmt.Sprint("rank ", r), func(t *testing.T) {
			s := newSlots(1)
			release, err := s.take(context.Background(), rankRun)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := s.take(ctx, r)
				errc <- err
			}()
			waitQueued(t, s, r, 1)
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("take = %v, want context.Canceled", err)
			}
			release()
			if s.free != 1 || len(s.waiting[r]) != 0 {
				t.Fatalf("free = %d, waiting = %d; want 1, 0", s.free, len(s.waiting[r]))
			}
		})
	}
}

// waitQueued waits until n callers of rank r wait for a slot.
func waitQueued(t *testing.T, s *slots, r callRank, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		got := len(s.waiting[r])
		s.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers of rank %d wait, want %d", got, r, n)
		}
	}
}

// count is how many of ranks are r.
func count(ranks []callRank, r callRank) int {
	n := 0
	for _, x := range ranks {
		if x == r {
			n++
		}
	}
	return n
}
