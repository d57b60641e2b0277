package runs_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// TestStartStaticSummary: a run carries a summary and details for the
// Temporal UI (tool, tenant, subject, transport), which Temporal's
// describe call returns.
func TestStartStaticSummary(t *testing.T) {
	s, c := setup(t)
	ctx := ctxT(t)
	snap, err := s.Start(ctx, runs.NewRun{Tool: signals.ToolSpec{Name: "greet"}, Arguments: []byte(`{"name":"Ada"}`),
		Caller: alice, Transport: signals.TransportREST})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.DescribeWorkflow(ctx, snap.RunID, "")
	if err != nil {
		t.Fatal(err)
	}
	summary, err := d.GetStaticSummary()
	if err != nil {
		t.Fatal(err)
	}
	if summary != "greet for urn:test:alice (tenant acme) via rest" {
		t.Errorf("static summary = %q", summary)
	}
	details, err := d.GetStaticDetails()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`greet`", "`acme`", "`urn:test:alice`", "issuer `test`", "`rest`", "GET /runs/acme~2F", "`getRun`"} {
		if !strings.Contains(details, want) {
			t.Errorf("static details lack %q:\n%s", want, details)
		}
	}
}

// TestReadWithoutWorker: once the worker of a waiting run has stopped, Get
// answers the run's status and open interrupt from what the run published
// in Temporal, its task queue is reported unserved, and a run that
// published nothing (it never ran a workflow task) reads pending from
// describe as before.
func TestReadWithoutWorker(t *testing.T) {
	env := testenv.Temporal(t)
	tq, stopWorker := toolWorker(t, env)
	s := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
	ctx := ctxT(t)
	snap := start(t, s, "conformance-approval-approvers", `{}`, alice)
	waiting, err := s.Await(ctx, alice, snap.RunID, func(x signals.Snapshot) bool { return len(x.Interrupts) == 1 })
	if err != nil {
		t.Fatal(err)
	}
	if q, err := s.UnservedQueues(ctx, tq); err != nil || len(q) != 0 {
		t.Fatalf("UnservedQueues with a worker = %v, %v", q, err)
	}
	stopWorker()

	for i := range 2 {
		got, err := s.Get(ctx, alice, snap.RunID)
		if err != nil {
			t.Fatalf("Get %d without a worker: %v", i, err)
		}
		if got.Status != signals.StatusWaitingApproval || got.StatusMessage != signals.StatusWaitingApproval.Message() ||
			len(got.Interrupts) != 1 || got.CurrentNodeID() != waiting.CurrentNodeID() {
			t.Fatalf("Get %d without a worker = %+v, want waiting-approval with %+v", i, got, waiting.Interrupts)
		}
		in, want := got.Interrupts[0], waiting.Interrupts[0]
		if in.ID != want.ID || in.Title != want.Title || in.Kind != want.Kind || strings.Join(in.Approvers, ",") != strings.Join(want.Approvers, ",") ||
			strings.Join(in.Actions, ",") != strings.Join(want.Actions, ",") || !in.RequestedAt.Equal(want.RequestedAt) {
			t.Fatalf("interrupt without a worker = %+v, want %+v", in, want)
		}
		if !reflect.DeepEqual(got.Owner, waiting.Owner) || got.Tool != waiting.Tool || got.LastSequence != waiting.LastSequence {
			t.Fatalf("Get %d without a worker = %+v, want the owner, tool and sequence of %+v", i, got, waiting)
		}
		// The eligibility check works on the published interrupt.
		if _, err := s.Resolve(ctx, bob, snap.RunID, signals.Resolution{InterruptID: in.ID, Action: signals.ActionAccept}); err != runs.ErrNotEligible {
			t.Fatalf("Resolve by an ineligible subject without a worker: %v, want ErrNotEligible", err)
		}
	}
	// An eligible resolution is recorded at once, to be applied when a
	// worker returns.
	if _, err := s.Resolve(ctx, listed, snap.RunID, signals.Resolution{InterruptID: waiting.Interrupts[0].ID,
		Action: signals.ActionAccept, Content: []byte(`{"action":"accept"}`)}); err != runs.ErrNotApplied {
		t.Fatalf("Resolve without a worker: %v, want ErrNotApplied", err)
	}

	// Events are not published: none are returned, and the caller keeps
	// its place in the log.
	page, polled, err := s.Events(ctx, alice, snap.RunID, 0, 0)
	if err != nil || len(page.Events) != 0 || page.LastSequence != 0 || polled.Status != signals.StatusWaitingApproval {
		t.Fatalf("Events without a worker = %+v, %s, %v", page, polled.Status, err)
	}
	q, err := s.UnservedQueues(ctx)
	if err != nil || len(q) != 1 || q[0] != (runs.Unserved{TaskQueue: tq}) {
		t.Fatalf("UnservedQueues without a worker = %v, %v, want [%s]", q, err, tq)
	}

	// A run that never ran a workflow task published nothing.
	fresh := start(t, s, "conformance-approval", `{}`, alice)
	began := time.Now()
	got, err := s.Get(ctx, alice, fresh.RunID)
	if err != nil || got.Status != signals.StatusPending || len(got.Interrupts) != 0 || got.Tool != "conformance-approval" {
		t.Fatalf("Get of a run that never ran = %+v, %v, want pending", got, err)
	}
	t.Logf("Get of a run that never ran, without a worker: %v", time.Since(began))
}

// TestUnservedQueueNeverPolled: a task queue no worker has polled is
// reported unserved, the outage is logged once at WARN however often it is
// checked, and once a worker polls it the queue is served again (logged
// once at INFO) and stays checked without being named.
func TestUnservedQueueNeverPolled(t *testing.T) {
	env := testenv.Temporal(t)
	core, logs := observer.New(zap.InfoLevel)
	tq := testenv.UniqueTaskQueue(t)
	s := runs.New(env.Client, zap.New(core), runs.Options{TaskQueue: tq, Namespace: env.Namespace})
	ctx := ctxT(t)
	for range 3 {
		if q, err := s.UnservedQueues(ctx, tq); err != nil || len(q) != 1 || q[0] != (runs.Unserved{TaskQueue: tq}) {
			t.Fatalf("UnservedQueues of a queue never polled = %v, %v", q, err)
		}
	}
	count := func(level zapcore.Level, snippet string) int {
		n := 0
		for _, e := range logs.FilterMessageSnippet(snippet).All() {
			if e.Level == level && e.ContextMap()["taskQueue"] == tq {
				n++
			}
		}
		return n
	}
	if n := count(zapcore.WarnLevel, "no worker serves the task queue"); n != 1 {
		t.Fatalf("%d WARN lines for the outage, want 1", n)
	}
	env.NewWorker(t, tq, func(worker.Registry) {})
	deadline := time.Now().Add(20 * time.Second)
	for {
		// Without naming it: the queue is remembered.
		q, err := s.UnservedQueues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(q) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("UnservedQueues with a worker = %v", q)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := count(zapcore.InfoLevel, "a worker polls the task queue again"); n != 1 {
		t.Fatalf("%d INFO lines for the end of the outage, want 1", n)
	}
}
