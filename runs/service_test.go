package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

var (
	alice   = signals.Subject{Issuer: "test", SubjectID: "urn:test:alice", Tenant: "acme"}
	bob     = signals.Subject{Issuer: "test", SubjectID: "urn:test:bob", Tenant: "acme"}
	mallory = signals.Subject{Issuer: "test", SubjectID: "urn:test:mallory", Tenant: "evil"}
	listed  = signals.Subject{Issuer: "test", SubjectID: conformancetools.ListedApprover, Tenant: "acme"}
)

// setup starts a worker with every tool on a fresh task queue and returns a
// Service on it.
func setup(t testing.TB) (*runs.Service, client.Client) {
	t.Helper()
	return setupWith(t, nil)
}

// setupWith is setup with a hook that adjusts the Service's Options.
func setupWith(t testing.TB, adjust func(*runs.Options)) (*runs.Service, client.Client) {
	t.Helper()
	env := testenv.Temporal(t)
	tq := exampleWorker(t, env)
	opts := runs.Options{TaskQueue: tq, Namespace: env.Namespace}
	if adjust != nil {
		adjust(&opts)
	}
	return runs.New(env.Client, env.Logger, opts), env.Client
}

// exampleWorker runs a worker of the example tools and fixtures on a new
// task queue of env and returns the queue.
func exampleWorker(t testing.TB, env *testenv.Env) string {
	t.Helper()
	tq := testenv.UniqueTaskQueue(t)
	reg, err := conformancetools.Registry(tools.NewActivities(env.Logger, tools.ActivityOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	env.NewWorker(t, tq, reg.Register)
	return tq
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func start(t testing.TB, s *runs.Service, tool string, args string, caller signals.Subject) signals.Snapshot {
	t.Helper()
	// The spec names no task queue: the run starts on the service's.
	snap, err := s.Start(ctxT(t), runs.NewRun{Tool: signals.ToolSpec{Name: tool}, Arguments: json.RawMessage(args), Caller: caller, Transport: signals.TransportMCP})
	if err != nil {
		t.Fatalf("start %s: %v", tool, err)
	}
	return snap
}

func terminal(s signals.Snapshot) bool { return s.Status.Terminal() }

func TestStartGetAwait(t *testing.T) {
	s, _ := setup(t)
	ctx := ctxT(t)
	snap := start(t, s, "conformance-delay", `{"delayMs":1500}`, alice)
	// Start returns once the run exists, before its first workflow task.
	if snap.Status != signals.StatusPending {
		t.Fatalf("status after start = %s, want pending", snap.Status)
	}
	if snap.Owner.Tenant != "acme" || snap.Owner.Subject.SubjectID != alice.SubjectID || snap.Tool != "conformance-delay" {
		t.Fatalf("snapshot owner/workflow = %+v / %s", snap.Owner, snap.Tool)
	}
	// An immediate Get waits for that task and reads the run running.
	got, err := s.Get(ctx, alice, snap.RunID)
	if err != nil || got.Status != signals.StatusRunning {
		t.Fatalf("Get = %s, %v", got.Status, err)
	}
	done, err := s.Await(ctx, alice, snap.RunID, terminal)
	if err != nil || done.Status != signals.StatusCompleted || done.Result == nil || done.Result.IsError {
		t.Fatalf("Await = %+v, %v", done, err)
	}
	// A closed run is read from its close event.
	again, err := s.Get(ctx, bob, snap.RunID)
	if err != nil || again.Status != signals.StatusCompleted || string(again.Outputs) != string(done.Outputs) {
		t.Fatalf("Get after close = %+v, %v", again, err)
	}
}

// TestStartWaitFirstTask: with WaitFirstTask, Start returns the answer of
// the run's first getRun query.
func TestStartWaitFirstTask(t *testing.T) {
	s, _ := setupWith(t, func(o *runs.Options) { o.WaitFirstTask = true })
	snap := start(t, s, "conformance-delay", `{"delayMs":1500}`, alice)
	if snap.Status != signals.StatusRunning {
		t.Fatalf("status after start = %s, want running", snap.Status)
	}
	if snap.Owner.Tenant != "acme" || snap.Owner.Subject.SubjectID != alice.SubjectID || snap.Tool != "conformance-delay" {
		t.Fatalf("snapshot owner/workflow = %+v / %s", snap.Owner, snap.Tool)
	}
}

func TestIsolation(t *testing.T) {
	s, _ := setup(t)
	ctx := ctxT(t)
	snap := start(t, s, "conformance-delay", `{"delayMs":0}`, alice)
	tests := []struct {
		name   string
		caller signals.Subject
		id     string
		want   error
	}{
		{"other tenant", mallory, snap.RunID, runs.ErrTenantMismatch},
		{"unknown id", alice, "acme/AAAAAAAAAAAAAAAAAAAAAAAA", runs.ErrNotFound},
		{"malformed id", alice, "acme-no-slash", runs.ErrNotFound},
		{"forged tenant segment", mallory, "evil/" + snap.RunID[len("acme/"):], runs.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Get(ctx, tt.caller, tt.id); !errors.Is(err, tt.want) {
				t.Errorf("Get = %v, want %v", err, tt.want)
			}
			if _, err := s.Cancel(ctx, tt.caller, tt.id, ""); !errors.Is(err, tt.want) {
				t.Errorf("Cancel = %v, want %v", err, tt.want)
			}
			if _, err := s.Resolve(ctx, tt.caller, tt.id, signals.Resolution{InterruptID: "x", Action: signals.ActionAccept}); !errors.Is(err, tt.want) {
				t.Errorf("Resolve = %v, want %v", err, tt.want)
			}
			if _, _, err := s.Events(ctx, tt.caller, tt.id, -1, 0); !errors.Is(err, tt.want) {
				t.Errorf("Events = %v, want %v", err, tt.want)
			}
		})
	}
}

func waitingApproval(s signals.Snapshot) bool { return len(s.Interrupts) > 0 }

func TestResolve(t *testing.T) {
	s, _ := setup(t)
	ctx := ctxT(t)
	snap := start(t, s, "conformance-approval", `{}`, alice)
	snap, err := s.Await(ctx, alice, snap.RunID, waitingApproval)
	if err != nil || snap.Status != signals.StatusWaitingApproval {
		t.Fatalf("Await = %s, %v", snap.Status, err)
	}
	id := snap.Interrupts[0].ID
	accept := signals.Resolution{InterruptID: id, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"accept"}`)}

	if _, err := s.Resolve(ctx, alice, snap.RunID, signals.Resolution{InterruptID: snap.RunID + "-i99", Action: signals.ActionAccept}); !errors.Is(err, runs.ErrNotOpen) {
		t.Fatalf("never-issued interrupt: %v, want ErrNotOpen", err)
	}
	after, err := s.Resolve(ctx, bob, snap.RunID, accept)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if _, open := after.Interrupt(id); open {
		t.Fatal("the snapshot returned by Resolve still lists the interrupt")
	}
	if r, ok := after.ResolvedBy(id); !ok || r.ResolvedBy.SubjectID != bob.SubjectID {
		t.Fatalf("resolvedBy = %+v", r)
	}
	if _, err := s.Resolve(ctx, alice, snap.RunID, accept); !errors.Is(err, runs.ErrAlreadyResolved) {
		t.Fatalf("second resolution: %v, want ErrAlreadyResolved", err)
	}
	done, err := s.Await(ctx, alice, snap.RunID, terminal)
	if err != nil || done.Status != signals.StatusCompleted {
		t.Fatalf("after accept: %s, %v", done.Status, err)
	}
}

func TestResolveConcurrently(t *testing.T) {
	s, _ := setup(t)
	ctx := ctxT(t)
	snap := start(t, s, "conformance-approval", `{}`, alice)
	snap, err := s.Await(ctx, alice, snap.RunID, waitingApproval)
	if err != nil {
		t.Fatal(err)
	}
	id := snap.Interrupts[0].ID
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = s.Resolve(ctx, alice, snap.RunID, signals.Resolution{InterruptID: id, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"accept"}`)})
		}(i)
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, runs.ErrAlreadyResolved):
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d resolutions won, want exactly 1 (%v)", won, errs)
	}
	done, err := s.Await(ctx, alice, snap.RunID, terminal)
	if err != nil {
		t.Fatal(err)
	}
	page, _, err := s.Events(ctx, alice, done.RunID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	resolved := 0
	for _, e := range page.Events {
		if e.Type == signals.EventInterruptResolved {
			resolved++
		}
	}
	if resolved != 1 {
		t.Fatalf("%d interrupt.resolved events, want 1", resolved)
	}
}

func TestResolveNotEligible(t *testing.T) {
	s, _ := setup(t)
	ctx := ctxT(t)
	snap := start(t, s, "conformance-approval-approvers", `{}`, alice)
	snap, err := s.Await(ctx, alice, snap.RunID, waitingApproval)
	if err != nil {
		t.Fatal(err)
	}
	res := signals.Resolution{InterruptID: snap.Interrupts[0].ID, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"accept"}`)}
	if _, err := s.Resolve(ctx, alice, snap.RunID, res); !errors.Is(err, runs.ErrNotEligible) {
		t.Fatalf("ineligible resolver: %v, want ErrNotEligible", err)
	}
	if got, _ := s.Get(ctx, alice, snap.RunID); got.Status != signals.StatusWaitingApproval {
		t.Fatalf("status after refused resolution = %s", got.Status)
	}
	if _, err := s.Resolve(ctx, listed, snap.RunID, res); err != nil {
		t.Fatalf("listed approver: %v", err)
	}
}

func TestCancel(t *testing.T) {
	s, _ := setup(t)
	ctx := ctxT(t)
	snap := start(t, s, "conformance-cancellable", `{"delayMs":60000}`, alice)
	after, err := s.Cancel(ctx, alice, snap.RunID, signals.ReasonMCPRequestCancelled)
	if err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if after.Status != signals.StatusCancelling && after.Status != signals.StatusCancelled {
		t.Fatalf("status after cancel = %s", after.Status)
	}
	done, err := s.Await(ctx, alice, snap.RunID, terminal)
	if err != nil || done.Status != signals.StatusCancelled || done.CancelReason != signals.ReasonMCPRequestCancelled {
		t.Fatalf("after cancel: %s reason %q, %v", done.Status, done.CancelReason, err)
	}
	if _, err := s.Cancel(ctx, alice, snap.RunID, ""); !errors.Is(err, runs.ErrTerminal) {
		t.Fatalf("cancel of a terminal run: %v, want ErrTerminal", err)
	}
	page, _, err := s.Events(ctx, alice, snap.RunID, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := page.Events[len(page.Events)-1]
	if last.Type != signals.EventRunCancelled {
		t.Fatalf("last event %s, want run.cancelled", last.Type)
	}
}

func TestEventsLongPoll(t *testing.T) {
	s, _ := setup(t)
	ctx := ctxT(t)
	snap := start(t, s, "conformance-delay", `{"delayMs":1000}`, alice)
	// Start does not wait for the run's first workflow task, which
	// records run.started: the first page waits for it.
	page, _, err := s.Events(ctx, alice, snap.RunID, -1, 20*time.Second)
	if err != nil || len(page.Events) == 0 || page.Events[0].Type != signals.EventRunStarted || page.Events[0].Sequence != 0 {
		t.Fatalf("first page = %+v, %v", page, err)
	}
	// Waits for the run to complete and returns the new events.
	next, cur, err := s.Events(ctx, alice, snap.RunID, page.LastSequence, 20*time.Second)
	if err != nil || len(next.Events) == 0 {
		t.Fatalf("long poll = %+v, %v", next, err)
	}
	for i, e := range next.Events {
		if e.Sequence != page.LastSequence+1+i {
			t.Fatalf("sequence gap: %+v", next.Events)
		}
	}
	if !cur.Status.Terminal() || next.Events[len(next.Events)-1].Type != signals.EventRunCompleted {
		t.Fatalf("after long poll: %s, last %s", cur.Status, next.Events[len(next.Events)-1].Type)
	}
	// Nothing new after the end: returns at once, empty.
	end, _, err := s.Events(ctx, alice, snap.RunID, next.LastSequence, 20*time.Second)
	if err != nil || len(end.Events) != 0 {
		t.Fatalf("after the end = %+v, %v", end, err)
	}
}

func TestListPagesNewestFirst(t *testing.T) {
	s, _ := setup(t)
	ctx := ctxT(t)
	tenant := signals.Subject{SubjectID: "urn:test:lister", Tenant: fmt.Sprintf("list%d", time.Now().UnixNano())}
	var ids []string
	for i := 0; i < 7; i++ {
		ids = append(ids, start(t, s, "conformance-delay", `{"delayMs":0}`, tenant).RunID)
	}
	for _, id := range ids {
		if _, err := s.Await(ctx, tenant, id, terminal); err != nil {
			t.Fatal(err)
		}
	}
	// The runs ended in their histories; visibility follows (the rule of
	// internal/testing/visibility): list until every one is listed completed.
	visibility.Require(t, "seven completed runs listed newest first in pages of 3", func(ctx context.Context) error {
		return listedNewestFirst(ctx, s, tenant, ids)
	})
	if _, err := s.List(ctx, tenant, runs.ListRequest{Cursor: "!!"}); !errors.Is(err, runs.ErrBadCursor) {
		t.Fatalf("bad cursor: %v", err)
	}
}

// listedNewestFirst lists tenant's runs of conformance-delay in pages of
// 3 and reports what differs from ids all listed once, completed, the
// latest closed first.
func listedNewestFirst(ctx context.Context, s *runs.Service, tenant signals.Subject, ids []string) error {
	seen := map[string]bool{}
	var last time.Time
	cursor := ""
	for {
		page, err := s.List(ctx, tenant, runs.ListRequest{Tool: "conformance-delay", Limit: 3, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, r := range page.Runs {
			if seen[r.RunID] {
				return fmt.Errorf("run %s listed twice", r.RunID)
			}
			seen[r.RunID] = true
			if r.Tool != "conformance-delay" || r.Owner.Tenant != tenant.Tenant {
				return fmt.Errorf("foreign run listed: %+v", r)
			}
			if r.Status != signals.StatusCompleted {
				return fmt.Errorf("run %s listed %s", r.RunID, r.Status)
			}
			if !last.IsZero() && r.UpdatedAt.After(last) {
				return fmt.Errorf("closed runs not latest-closed first at %s", r.RunID)
			}
			last = r.UpdatedAt
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	for _, id := range ids {
		if !seen[id] {
			return fmt.Errorf("run %s not listed (%d of %d listed)", id, len(seen), len(ids))
		}
	}
	if len(seen) != len(ids) {
		return fmt.Errorf("listed %d runs, want %d", len(seen), len(ids))
	}
	return nil
}

// BenchmarkGetTerminal compares the two ways to answer getRun for a closed
// run: the close event (describe + one history event, no worker) and the
// getRun query, which makes a worker replay the whole history.
func BenchmarkGetTerminal(b *testing.B) {
	s, c := setup(b)
	ctx := ctxT(b)
	snap := start(b, s, "conformance-approval", `{}`, alice)
	snap, err := s.Await(ctx, alice, snap.RunID, waitingApproval)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Resolve(ctx, alice, snap.RunID, signals.Resolution{InterruptID: snap.Interrupts[0].ID, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"accept"}`)}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Await(ctx, alice, snap.RunID, terminal); err != nil {
		b.Fatal(err)
	}
	b.Run("close-event", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if got, err := s.Get(ctx, alice, snap.RunID); err != nil || got.Status != signals.StatusCompleted {
				b.Fatal(got.Status, err)
			}
		}
	})
	b.Run("query-replay", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			v, err := c.QueryWorkflow(ctx, snap.RunID, "", signals.QueryGetRun)
			if err != nil {
				b.Fatal(err)
			}
			var got signals.Snapshot
			if err := v.Get(&got); err != nil || got.Status != signals.StatusCompleted {
				b.Fatal(got.Status, err)
			}
		}
	})
}
