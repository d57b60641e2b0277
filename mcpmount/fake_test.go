package mcpmount

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/openwop/temporal-mcp/internal/runid"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// fakeRuns is an in-memory Runs for unit tests of the protocol layer. It
// mirrors the contract of runs.Service (authorization before lookup, the
// sentinel errors) without Temporal. Integration tests use the real thing.
type fakeRuns struct {
	mu       sync.Mutex
	runs     map[string]*signals.Snapshot
	starts   []runs.StartRequest
	cancels  map[string]string // runId -> reason
	resolved []signals.Resolution
	// onStart shapes a new run's snapshot (status, interrupts, result).
	onStart func(req runs.StartRequest, s *signals.Snapshot)
	// onResolve updates a run after an applied resolution.
	onResolve func(s *signals.Snapshot)
}

func newFakeRuns() *fakeRuns {
	return &fakeRuns{runs: map[string]*signals.Snapshot{}, cancels: map[string]string{}}
}

func (f *fakeRuns) authorize(caller signals.Subject, id string) (*signals.Snapshot, error) {
	if !runid.Valid(id) {
		return nil, runs.ErrNotFound
	}
	if runid.Tenant(id) != caller.Tenant {
		return nil, runs.ErrTenantMismatch
	}
	s, ok := f.runs[id]
	if !ok {
		return nil, runs.ErrNotFound
	}
	return s, nil
}

func (f *fakeRuns) Start(_ context.Context, req runs.StartRequest) (signals.Snapshot, error) {
	id, err := runid.New(req.Caller.Tenant, nil)
	if err != nil {
		return signals.Snapshot{}, err
	}
	now := time.Now().UTC()
	s := &signals.Snapshot{
		RunID: id, WorkflowID: req.Tool, Status: signals.StatusRunning,
		Owner:     signals.Owner{Tenant: req.Caller.Tenant, Subject: req.Caller},
		Transport: req.Transport, CreatedAt: now, UpdatedAt: now,
		StatusMessage: "the run is running", LastSequence: 0,
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.onStart != nil {
		f.onStart(req, s)
	}
	f.starts = append(f.starts, req)
	f.runs[id] = s
	return *s, nil
}

func (f *fakeRuns) Get(_ context.Context, caller signals.Subject, id string) (signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.authorize(caller, id)
	if err != nil {
		return signals.Snapshot{}, err
	}
	return *s, nil
}

func (f *fakeRuns) Resolve(_ context.Context, caller signals.Subject, id string, r signals.Resolution) (signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.authorize(caller, id)
	if err != nil {
		return signals.Snapshot{}, err
	}
	it, open := s.Interrupt(r.InterruptID)
	if !open {
		if _, done := s.ResolvedBy(r.InterruptID); done {
			return *s, runs.ErrAlreadyResolved
		}
		return *s, runs.ErrNotOpen
	}
	if !it.Eligible(caller) {
		return *s, runs.ErrNotEligible
	}
	r.ResolvedBy = caller
	f.resolved = append(f.resolved, r)
	var left []signals.Interrupt
	for _, x := range s.Interrupts {
		if x.ID != r.InterruptID {
			left = append(left, x)
		}
	}
	s.Interrupts = left
	s.Resolved = append(s.Resolved, signals.Resolved{Resolution: r, ResolvedAt: time.Now()})
	if f.onResolve != nil {
		f.onResolve(s)
	}
	return *s, nil
}

func (f *fakeRuns) Cancel(_ context.Context, caller signals.Subject, id, reason string) (signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.authorize(caller, id)
	if err != nil {
		return signals.Snapshot{}, err
	}
	if s.Status.Terminal() {
		return *s, runs.ErrTerminal
	}
	f.cancels[id] = reason
	s.Status, s.CancelReason, s.StatusMessage = signals.StatusCancelled, reason, "the run is cancelled"
	return *s, nil
}

func (f *fakeRuns) Await(ctx context.Context, caller signals.Subject, id string, done func(signals.Snapshot) bool) (signals.Snapshot, error) {
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

// update changes a stored run.
func (f *fakeRuns) update(id string, fn func(*signals.Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.runs[id])
}

func (f *fakeRuns) startCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.starts)
}

func (f *fakeRuns) lastStart() runs.StartRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts[len(f.starts)-1]
}

// resolutions returns the applied resolutions.
func (f *fakeRuns) resolutions() []signals.Resolution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]signals.Resolution(nil), f.resolved...)
}

// lastID returns the runId of the last started run.
func (f *fakeRuns) lastID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var last *signals.Snapshot
	for _, s := range f.runs {
		if last == nil || s.CreatedAt.After(last.CreatedAt) {
			last = s
		}
	}
	if last == nil {
		return ""
	}
	return last.RunID
}

func (f *fakeRuns) cancelReason(id string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.cancels[id]
	return r, ok
}

// completeWith marks a run completed with a text result.
func completeWith(s *signals.Snapshot, text string) {
	s.Status = signals.StatusCompleted
	s.StatusMessage = "the run is completed"
	s.Result = &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: text}}}
	s.Outputs = json.RawMessage(`{}`)
}
