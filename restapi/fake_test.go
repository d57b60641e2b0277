package restapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/openwop/temporal-mcp/internal/runid"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// fakeRuns is an in-memory Runs for handler tests. It follows the
// runs.Service error contract (tenant check from the id alone first).
type fakeRuns struct {
	mu     sync.Mutex
	runs   map[string]*fakeRun
	starts []runs.StartRequest
	// cancels records (runId, reason) of Cancel calls.
	cancels [][2]string
	// lists records List requests.
	lists []runs.ListRequest
	// listPage is answered by List.
	listPage runs.ListPage
	// waits records the wait of Events calls.
	waits []time.Duration
	// resolutions records applied and refused resolutions.
	resolutions []signals.Resolution
	// err, when set, is returned by every method.
	err error
	// waitErr, when set, is returned by Events calls that wait.
	waitErr error
	// beforeResolve, when set, runs (locked) at the start of Resolve.
	beforeResolve func(r *fakeRun)
}

type fakeRun struct {
	snap   signals.Snapshot
	events []signals.Event
}

func newFakeRuns() *fakeRuns { return &fakeRuns{runs: map[string]*fakeRun{}} }

func (f *fakeRuns) add(s signals.Snapshot, events ...signals.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs[s.RunID] = &fakeRun{snap: s, events: events}
}

func (f *fakeRuns) lookup(caller signals.Subject, id string) (*fakeRun, error) {
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

func (f *fakeRuns) Start(_ context.Context, req runs.StartRequest) (signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return signals.Snapshot{}, f.err
	}
	f.starts = append(f.starts, req)
	id, err := runid.New(req.Caller.Tenant, nil)
	if err != nil {
		return signals.Snapshot{}, err
	}
	s := signals.Snapshot{RunID: id, WorkflowID: req.Tool, Status: signals.StatusRunning,
		Owner: signals.Owner{Tenant: req.Caller.Tenant, Subject: req.Caller}, Transport: req.Transport}
	f.runs[id] = &fakeRun{snap: s}
	return s, nil
}

func (f *fakeRuns) Get(_ context.Context, caller signals.Subject, id string) (signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.lookup(caller, id)
	if err != nil {
		return signals.Snapshot{}, err
	}
	return r.snap, nil
}

func (f *fakeRuns) Events(_ context.Context, caller signals.Subject, id string, after int, wait time.Duration) (signals.EventPage, signals.Snapshot, error) {
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
	for _, e := range r.events {
		if e.Sequence > after {
			page.Events = append(page.Events, e)
		}
		page.LastSequence = e.Sequence
	}
	return page, r.snap, nil
}

func (f *fakeRuns) Resolve(_ context.Context, caller signals.Subject, id string, res signals.Resolution) (signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.lookup(caller, id)
	if err != nil {
		return signals.Snapshot{}, err
	}
	f.resolutions = append(f.resolutions, res)
	if f.beforeResolve != nil {
		f.beforeResolve(r)
	}
	if _, done := r.snap.ResolvedBy(res.InterruptID); done {
		return signals.Snapshot{}, runs.ErrAlreadyResolved
	}
	if r.snap.Status.Terminal() {
		return signals.Snapshot{}, runs.ErrTerminal
	}
	in, ok := r.snap.Interrupt(res.InterruptID)
	if !ok {
		return signals.Snapshot{}, runs.ErrNotOpen
	}
	if !in.Eligible(caller) {
		return signals.Snapshot{}, runs.ErrNotEligible
	}
	r.snap.Resolved = append(r.snap.Resolved, signals.Resolved{Resolution: res})
	r.snap.Interrupts = nil
	r.snap.Status = signals.StatusRunning
	r.events = append(r.events, signals.Event{Type: signals.EventInterruptResolved, NodeID: in.NodeID, Sequence: len(r.events)})
	return r.snap, nil
}

func (f *fakeRuns) Cancel(_ context.Context, caller signals.Subject, id, reason string) (signals.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, [2]string{id, reason})
	r, err := f.lookup(caller, id)
	if err != nil {
		return signals.Snapshot{}, err
	}
	if r.snap.Status.Terminal() {
		return signals.Snapshot{}, runs.ErrTerminal
	}
	r.snap.Status = signals.StatusCancelling
	return r.snap, nil
}

func (f *fakeRuns) List(_ context.Context, caller signals.Subject, req runs.ListRequest) (runs.ListPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return runs.ListPage{}, f.err
	}
	f.lists = append(f.lists, req)
	return f.listPage, nil
}

// fakeAuth maps "Bearer key-<tenant>" to a subject of that tenant, and
// "Bearer approver" to the listed conformance approver of tenant acme.
func fakeAuth(r *http.Request) (signals.Subject, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return signals.Subject{}, errors.New("no bearer credential")
	}
	if tok == "approver" {
		return signals.Subject{Issuer: "test", SubjectID: "urn:conformance:listed-approver", Tenant: "acme"}, nil
	}
	tenant, ok := strings.CutPrefix(tok, "key-")
	if !ok || tenant == "" {
		return signals.Subject{}, errors.New("unknown key")
	}
	return signals.Subject{Issuer: "test", SubjectID: "urn:test:" + tenant, Tenant: tenant}, nil
}
