package runs_test

import (
	"context"
	"encoding/json"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// toolWorker runs the example tools on a task queue of their own, on the
// environment's client, until the test ends or stop is called.
func toolWorker(t *testing.T, env *testenv.Env) (tq string, stop func()) {
	t.Helper()
	tq = testenv.UniqueTaskQueue(t)
	reg, err := conformancetools.Registry(tools.NewActivities(env.Logger, tools.ActivityOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(env.Client, tq, worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(w.Stop) }
	t.Cleanup(stop)
	return tq, stop
}

// TestPollAnswersHeldReading: while reading a run is slow (here: its
// worker stopped, so the getRun query waits out the query patience), a
// Poll is answered at once with the last reading held, and a Get waits
// for the read. A new run's first Poll is answered with what Start knew.
func TestPollAnswersHeldReading(t *testing.T) {
	env := testenv.Temporal(t)
	tq, stop := toolWorker(t, env)
	const patience = 3 * time.Second
	s := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace,
		ReadWindow: 250 * time.Millisecond, QueryPatience: patience})
	ctx := ctxT(t)
	waiting := start(t, s, "conformance-approval", `{}`, alice)
	if _, err := s.Await(ctx, alice, waiting.RunID, waitingApproval); err != nil {
		t.Fatal(err)
	}
	held, err := s.Get(ctx, alice, waiting.RunID)
	if err != nil || len(held.Interrupts) != 1 {
		t.Fatalf("Get = %+v, %v", held, err)
	}
	stop()
	time.Sleep(time.Second) // past every window: nothing held is fresh

	began := time.Now()
	polled, err := s.Get(ctx, alice, waiting.RunID, runs.AllowStale())
	took := time.Since(began)
	if err != nil || polled.Status != held.Status || len(polled.Interrupts) != 1 || polled.Interrupts[0].ID != held.Interrupts[0].ID {
		t.Fatalf("Poll while the read is slow = %+v, %v, want the reading held %+v", polled, err, held)
	}
	if took >= patience/2 {
		t.Errorf("Poll while the read is slow took %v: it waited for the read (patience %v)", took, patience)
	}
	began = time.Now()
	if _, err := s.Get(ctx, alice, waiting.RunID); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < patience/2 {
		t.Errorf("Get took %v: it did not read the run (patience %v)", took, patience)
	}

	fresh := start(t, s, "conformance-approval", `{}`, alice)
	began = time.Now()
	first, err := s.Get(ctx, alice, fresh.RunID, runs.AllowStale())
	if err != nil || first.RunID != fresh.RunID || first.Status != fresh.Status || !first.CreatedAt.Equal(fresh.CreatedAt) {
		t.Fatalf("first Poll of a new run = %+v, %v, want what Start answered %+v", first, err, fresh)
	}
	if took := time.Since(began); took >= patience/2 {
		t.Errorf("first Poll of a new run took %v: it waited for the read", took)
	}
}

// inFlight counts the short Temporal calls in flight on a client and
// remembers the most at once. Long polls (of history) and the worker's
// calls are not counted.
type inFlight struct {
	now, most atomic.Int32
}

func (f *inFlight) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	switch path.Base(method) {
	case "StartWorkflowExecution", "SignalWorkflowExecution", "QueryWorkflow", "DescribeWorkflowExecution", "RequestCancelWorkflowExecution":
	case "GetWorkflowExecutionHistory":
		if req.(*workflowservice.GetWorkflowExecutionHistoryRequest).GetWaitNewEvent() {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
	default:
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	n := f.now.Add(1)
	defer f.now.Add(-1)
	for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// TestTemporalCallsBounded: with Options.MaxTemporalCalls, no more short
// calls than that are in flight at once however many callers there are,
// and a caller that follows a run (a long poll) holds no slot: with one
// slot, Gets and answers of other runs go on while it waits.
func TestTemporalCallsBounded(t *testing.T) {
	env := testenv.Temporal(t)
	tq, _ := toolWorker(t, env)
	flight := &inFlight{}
	c, err := client.Dial(client.Options{
		HostPort: env.Address, Namespace: env.Namespace, Logger: devtemporal.SDKLogger(env.Logger),
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(flight.intercept)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := runs.New(c, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace, MaxTemporalCalls: 1, ReadWindow: -1})
	ctx := ctxT(t)

	// One caller follows a waiting run to its end.
	followed := start(t, s, "conformance-approval", `{}`, alice)
	follow := make(chan error, 1)
	go func() {
		_, err := s.Await(ctx, alice, followed.RunID, terminal)
		follow <- err
	}()

	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- lifecycle(ctx, s)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if most := flight.most.Load(); most != 1 {
		t.Errorf("at most %d short Temporal calls were in flight at once, want 1 (MaxTemporalCalls)", most)
	}
	select {
	case err := <-follow:
		t.Fatalf("the follower of a waiting run returned: %v", err)
	default:
	}
	if err := answer(ctx, s, followed.RunID); err != nil {
		t.Fatal(err)
	}
	if err := <-follow; err != nil {
		t.Fatalf("follow: %v", err)
	}
}

// lifecycle starts an approval run, waits until it asks, answers it and
// reads it completed.
func lifecycle(ctx context.Context, s *runs.Service) error {
	snap, err := s.Start(ctx, runs.NewRun{Tool: signals.ToolSpec{Name: "conformance-approval"},
		Arguments: json.RawMessage(`{}`), Caller: alice, Transport: signals.TransportMCP})
	if err != nil {
		return err
	}
	return answer(ctx, s, snap.RunID)
}

// answer waits until the run asks (polling it), accepts, and checks that
// it completed.
func answer(ctx context.Context, s *runs.Service, id string) error {
	for {
		snap, err := s.Get(ctx, alice, id, runs.AllowStale())
		if err != nil {
			return err
		}
		if len(snap.Interrupts) == 0 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		r := signals.Resolution{InterruptID: snap.Interrupts[0].ID, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"accept"}`)}
		if _, err := s.Resolve(ctx, alice, id, r); err != nil {
			return err
		}
		done, err := s.Await(ctx, alice, id, terminal)
		if err != nil {
			return err
		}
		if done.Status != signals.StatusCompleted {
			return &unexpected{id: id, status: done.Status}
		}
		return nil
	}
}

type unexpected struct {
	id     string
	status signals.Status
}

func (e *unexpected) Error() string { return "run " + e.id + " ended " + string(e.status) }
