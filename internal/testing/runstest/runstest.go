package runstest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// Run is a stored run: its snapshot and its event log.
type Run struct {
	Snapshot signals.Snapshot
	Events   []signals.Event
}

// CancelCall is one call of Cancel, whatever its outcome.
type CancelCall struct {
	RunID  string
	Reason string
}

// Fake is the in-memory run service. Make one with New. It is safe for
// concurrent use; its hooks run with its lock held and must not call its
// methods.
type Fake struct {
	mu   sync.Mutex
	runs map[string]*Run
	// started holds the ids of the runs Start created, in order.
	started []string
	starts  []runs.NewRun
	// cancelCalls records every Cancel call; cancelled the reason of the
	// cancellation applied to each run.
	cancelCalls []CancelCall
	cancelled   map[string]string
	// resolveCalls records every Resolve call; resolutions the applied ones.
	resolveCalls []signals.Resolution
	resolutions  []signals.Resolution
	lists        []runs.ListRequest
	listPage     runs.ListPage
	waits        []time.Duration

	err, waitErr error

	onStart       func(req runs.NewRun, s *signals.Snapshot)
	onResolve     func(s *signals.Snapshot)
	onCancel      func(s *signals.Snapshot)
	beforeResolve func(r *Run)
}

// New returns an empty Fake.
func New() *Fake {
	return &Fake{runs: map[string]*Run{}, cancelled: map[string]string{}}
}

// Configuration and hooks.

// SetErr makes every method fail with err (nil clears it): Start, List and
// each run lookup.
func (f *Fake) SetErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// SetWaitErr makes Events calls that wait (wait > 0) fail with err, as a
// long poll whose wait broke; calls that do not wait still answer.
func (f *Fake) SetWaitErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waitErr = err
}

// SetListPage sets the page List answers, whatever the request.
func (f *Fake) SetListPage(p runs.ListPage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listPage = p
}

// OnStart sets a hook that shapes the snapshot of each new run (status,
// interrupts, result) before Start stores and returns it.
func (f *Fake) OnStart(fn func(req runs.NewRun, s *signals.Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onStart = fn
}

// OnResolve sets a hook that updates a run after a resolution was applied.
func (f *Fake) OnResolve(fn func(s *signals.Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onResolve = fn
}

// OnCancel sets a hook that updates a run after a cancellation was
// requested. Without one the run stays cancelling, as a run does until its
// workflow honours the cancellation; a hook can end it (status cancelled).
func (f *Fake) OnCancel(fn func(s *signals.Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onCancel = fn
}

// BeforeResolve sets a hook that runs at the start of each Resolve of a
// readable run, before the interrupt is checked: a test can change the
// run there, as a concurrent actor would between a read and the
// resolution.
func (f *Fake) BeforeResolve(fn func(r *Run)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beforeResolve = fn
}

// Stored runs.

// Add stores a run with its event log, replacing any run with its id.
func (f *Fake) Add(s signals.Snapshot, events ...signals.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs[s.RunID] = &Run{Snapshot: cloneSnapshot(s), Events: slices.Clone(events)}
}

// Update changes the snapshot of a stored run. It panics if there is no
// run with that id.
func (f *Fake) Update(id string, fn func(*signals.Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		panic(fmt.Sprintf("runstest: Update of unknown run %q", id))
	}
	fn(&r.Snapshot)
}

// Records.

// Starts returns the requests of the runs Start created, in order.
func (f *Fake) Starts() []runs.NewRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.starts)
}

// StartCount is the number of runs Start created.
func (f *Fake) StartCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.starts)
}

// LastStart returns the request of the last run Start created (the zero
// request when none was).
func (f *Fake) LastStart() runs.NewRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.starts) == 0 {
		return runs.NewRun{}
	}
	return f.starts[len(f.starts)-1]
}

// LastID returns the id of the last run Start created ("" when none was).
func (f *Fake) LastID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.started) == 0 {
		return ""
	}
	return f.started[len(f.started)-1]
}

// CancelCalls returns every Cancel call, in order, including those that
// were refused (unknown run, another tenant's, terminal).
func (f *Fake) CancelCalls() []CancelCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.cancelCalls)
}

// CancelReason returns the reason of the cancellation applied to the run,
// and whether one was.
func (f *Fake) CancelReason(id string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.cancelled[id]
	return r, ok
}

// ResolveCalls returns the resolution of every Resolve call as it was
// passed, in order, including those that were refused.
func (f *Fake) ResolveCalls() []signals.Resolution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.resolveCalls)
}

// Resolutions returns the applied resolutions, in order, with ResolvedBy
// set to the caller as the service sets it.
func (f *Fake) Resolutions() []signals.Resolution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.resolutions)
}

// Lists returns the requests of the List calls that were answered.
func (f *Fake) Lists() []runs.ListRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lists)
}

// Waits returns the wait of every Events call, in order.
func (f *Fake) Waits() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.waits)
}

// The run service.

// lookup finds the caller's run as runs.Service does: the id's tenant
// segment first, then the run. The lock is held.
func (f *Fake) lookup(caller signals.Subject, id string) (*Run, error) {
	if f.err != nil {
		return nil, f.err
	}
	if !runid.Valid(id) {
		return nil, runs.ErrNotFound
	}
	if runid.Tenant(id) != caller.Tenant {
		return nil, runs.ErrTenantMismatch
	}
	r, ok := f.runs[id]
	if !ok {
		return nil, runs.ErrNotFound
	}
	return r, nil
}

// Start creates a running run of req.Tool owned by req.Caller, shaped by
// the OnStart hook.
func (f *Fake) Start(_ context.Context, req runs.NewRun) (signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return signals.Snapshot{}, f.err
	}
	id, err := runid.New(req.Caller.Tenant, nil)
	if err != nil {
		return signals.Snapshot{}, err
	}
	now := time.Now().UTC()
	s := signals.Snapshot{
		RunID: id, Tool: req.Tool.Name, Status: signals.StatusRunning,
		Owner:     signals.Owner{Tenant: req.Caller.Tenant, Subject: req.Caller},
		Transport: req.Transport, CreatedAt: now, UpdatedAt: now,
		StatusMessage: signals.StatusRunning.Message(), LastSequence: 0,
	}
	if f.onStart != nil {
		f.onStart(req, &s)
	}
	f.starts = append(f.starts, req)
	f.started = append(f.started, id)
	f.runs[id] = &Run{Snapshot: s}
	return cloneSnapshot(s), nil
}

// Get answers the run's snapshot. The Fake is never slow: it ignores
// runs.AllowStale.
func (f *Fake) Get(_ context.Context, caller signals.Subject, id string, _ ...runs.ReadOption) (signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.lookup(caller, id)
	if err != nil {
		return signals.Snapshot{}, err
	}
	return cloneSnapshot(r.Snapshot), nil
}

// Events answers the events after afterSequence at once (it never waits),
// with the run's snapshot. The page's LastSequence is that of the last
// stored event (-1 for none).
func (f *Fake) Events(_ context.Context, caller signals.Subject, id string, afterSequence int, wait time.Duration) (signals.EventPage, signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, wait)
	if wait > 0 && f.waitErr != nil {
		return signals.EventPage{}, signals.Snapshot{}, f.waitErr
	}
	r, err := f.lookup(caller, id)
	if err != nil {
		return signals.EventPage{}, signals.Snapshot{}, err
	}
	page := signals.EventPage{LastSequence: -1}
	for _, e := range r.Events {
		if e.Sequence > afterSequence {
			page.Events = append(page.Events, e)
		}
		page.LastSequence = e.Sequence
	}
	return page, cloneSnapshot(r.Snapshot), nil
}

// Resolve applies a resolution of an open interrupt as the run would: the
// interrupt closes, the resolution is recorded with ResolvedBy set to the
// caller, an interrupt.resolved event is logged, and a run left with no
// open interrupt is running again. Then the OnResolve hook runs. The Fake
// reads its run anyway, so a held snapshot (runs.Held) is not needed.
func (f *Fake) Resolve(_ context.Context, caller signals.Subject, id string, res signals.Resolution, _ ...runs.ResolveOption) (signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resolveCalls = append(f.resolveCalls, res)
	r, err := f.lookup(caller, id)
	if err != nil {
		return signals.Snapshot{}, err
	}
	if f.beforeResolve != nil {
		f.beforeResolve(r)
	}
	s := &r.Snapshot
	in, open := s.Interrupt(res.InterruptID)
	if !open {
		if _, done := s.ResolvedBy(res.InterruptID); done {
			return cloneSnapshot(*s), runs.ErrAlreadyResolved
		}
		if w, gone := s.WithdrawnAs(res.InterruptID); gone {
			if w.Reason == signals.WithdrawnExpired {
				return cloneSnapshot(*s), runs.ErrExpired
			}
			return cloneSnapshot(*s), runs.ErrWithdrawn
		}
		if s.Status.Terminal() {
			return cloneSnapshot(*s), runs.ErrTerminal
		}
		return cloneSnapshot(*s), runs.ErrNotOpen
	}
	if !in.Eligible(caller) {
		return cloneSnapshot(*s), runs.ErrNotEligible
	}
	if err := answers.Check(in, res); err != nil {
		return cloneSnapshot(*s), err
	}
	res.ResolvedBy = caller
	f.resolutions = append(f.resolutions, res)

	now := time.Now().UTC()
	s.Interrupts = slices.DeleteFunc(slices.Clone(s.Interrupts), func(i signals.Interrupt) bool { return i.ID == res.InterruptID })
	if len(s.Interrupts) == 0 {
		s.Interrupts = nil
		if !s.Status.Terminal() {
			s.Status, s.StatusMessage = signals.StatusRunning, signals.StatusRunning.Message()
		}
	}
	s.Resolved = append(slices.Clone(s.Resolved), signals.Resolved{Resolution: res, ResolvedAt: now})
	s.UpdatedAt = now
	seq := s.LastSequence
	if n := len(r.Events); n > 0 && r.Events[n-1].Sequence > seq {
		seq = r.Events[n-1].Sequence
	}
	seq++
	payload, _ := json.Marshal(map[string]any{
		"nodeId": in.NodeID, "interruptId": in.ID, "kind": in.Kind, "key": in.Key,
		"action": res.Action, "resolvedBy": res.ResolvedBy,
	})
	r.Events = append(r.Events, signals.Event{
		EventID: fmt.Sprintf("%s-e%d", id, seq), RunID: id, Type: signals.EventInterruptResolved,
		NodeID: in.NodeID, Payload: payload, Timestamp: now, Sequence: seq,
		SchemaVersion: signals.EventLogSchemaVersion,
	})
	s.LastSequence = seq
	if f.onResolve != nil {
		f.onResolve(s)
	}
	return cloneSnapshot(*s), nil
}

// Cancel requests cancellation of the run with reason (""
// means caller-requested): the run reads cancelling with that reason, and
// the OnCancel hook may end it. A terminal run is left alone and answered
// with ErrTerminal.
func (f *Fake) Cancel(_ context.Context, caller signals.Subject, id, reason string) (signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelCalls = append(f.cancelCalls, CancelCall{RunID: id, Reason: reason})
	r, err := f.lookup(caller, id)
	if err != nil {
		return signals.Snapshot{}, err
	}
	s := &r.Snapshot
	if s.Status.Terminal() {
		return cloneSnapshot(*s), runs.ErrTerminal
	}
	reason = cmp.Or(reason, signals.ReasonCallerRequested)
	f.cancelled[id] = reason
	s.Status, s.StatusMessage, s.CancelReason = signals.StatusCancelling, signals.StatusCancelling.Message(), reason
	s.UpdatedAt = time.Now().UTC()
	if f.onCancel != nil {
		f.onCancel(s)
	}
	return cloneSnapshot(*s), nil
}

// List answers the page set with SetListPage (an empty page by default),
// and records the request.
func (f *Fake) List(_ context.Context, _ signals.Subject, req runs.ListRequest) (runs.ListPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return runs.ListPage{}, f.err
	}
	f.lists = append(f.lists, req)
	page := f.listPage
	page.Runs = slices.Clone(page.Runs)
	return page, nil
}

// Await reads the run until done holds for its snapshot or it is
// terminal, or ctx ends. The Fake reads every snapshot alike: it ignores
// runs.PublishedOnly.
func (f *Fake) Await(ctx context.Context, caller signals.Subject, id string, done func(signals.Snapshot) bool, _ ...runs.AwaitOption) (signals.Snapshot, error) {
	for {
		s, err := f.Get(ctx, caller, id)
		if err != nil {
			return s, err
		}
		if done(s) || s.Status.Terminal() {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Release does nothing: the Fake journals no runs.
func (f *Fake) Release(string) {}

// Fake is a Backend.
var _ runs.Backend = (*Fake)(nil)

// cloneSnapshot copies s so that the copy shares no slice the Fake changes
// later.
func cloneSnapshot(s signals.Snapshot) signals.Snapshot {
	s.Interrupts = slices.Clone(s.Interrupts)
	s.Resolved = slices.Clone(s.Resolved)
	return s
}
