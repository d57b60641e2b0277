package runs

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// callRank orders the waiters for a Temporal call slot (slots).
type callRank int

const (
	// rankRun is a call on a run that exists: a read, a signal, a cancel.
	rankRun callRank = iota
	// rankStart is the start of a new run.
	rankStart
	ranks
)

// startShare is how many slots in a row the calls on existing runs may
// take while starts wait: every startShare+1-th slot freed goes to a
// start, so that polls of many runs cannot hold starts off.
const startShare = 3

// slots hands out a bounded number of Temporal call slots. A freed slot
// goes to the calls on runs that exist before the starts of new runs
// (but to a start at least every startShare+1-th time), each rank in the
// order its calls came. Past saturation, a slot given to a start adds a
// run to those in flight, whose reads and signals then wait behind the
// next starts: the clients poll runs that cannot move while more come
// in. Served first, the calls on the runs in flight finish them, and the
// starts wait at the door (in tools/call, with no polling), where waiting
// costs nothing.
type slots struct {
	mu   sync.Mutex
	free int
	// waiting are the waiters of each rank, oldest first; a waiter's
	// channel is closed when it is given a slot. There are waiters only
	// while no slot is free.
	waiting [ranks][]chan struct{}
	// passed counts the slots given in a row to calls on runs while
	// starts waited.
	passed int
}

// newSlots returns n free slots.
func newSlots(n int) *slots { return &slots{free: n} }

// take waits for a slot for a call of rank r and returns the func that
// gives it back, or ctx's error when it ends first.
func (s *slots) take(ctx context.Context, r callRank) (func(), error) {
	s.mu.Lock()
	if s.free > 0 {
		s.free--
		s.mu.Unlock()
		return s.give, nil
	}
	ch := make(chan struct{})
	s.waiting[r] = append(s.waiting[r], ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return s.give, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	i := slices.Index(s.waiting[r], ch)
	if i >= 0 {
		s.waiting[r] = slices.Delete(s.waiting[r], i, i+1)
	}
	s.mu.Unlock()
	if i < 0 {
		// Given a slot as ctx ended: pass it on.
		s.give()
	}
	return nil, fmt.Errorf("wait for a Temporal call slot: %w", ctx.Err())
}

// give frees a slot: to the next waiter (see slots), or to the free ones.
func (s *slots) give() {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := rankRun
	switch {
	case len(s.waiting[rankStart]) == 0:
		s.passed = 0
	case len(s.waiting[rankRun]) == 0 || s.passed >= startShare:
		r, s.passed = rankStart, 0
	default:
		s.passed++
	}
	if len(s.waiting[r]) == 0 {
		s.free++
		return
	}
	ch := s.waiting[r][0]
	s.waiting[r] = s.waiting[r][1:]
	close(ch)
}
