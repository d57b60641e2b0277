package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// TestAwaitHoldsItsLongPolls: an Await that reaches its deadline while the
// run works asks Temporal for the run's history a few times, however short
// the deadline: the server answers a long poll whose deadline is less than
// its tail room away at once, so a follow that handed its deadline on
// called Temporal thousands of times a second in its last second (every
// inline wait of a tools/call).
func TestAwaitHoldsItsLongPolls(t *testing.T) {
	env := testenv.Temporal(t)
	tq := exampleWorker(t, env)
	var polls atomic.Int64
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if _, ok := req.(*workflowservice.GetWorkflowExecutionHistoryRequest); ok {
			polls.Add(1)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	c, err := client.Dial(client.Options{HostPort: env.Address, Namespace: env.Namespace,
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(count)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := runs.New(c, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
	snap, err := s.Start(ctxT(t), runs.NewRun{Tool: signals.ToolSpec{Name: "conformance-delay"},
		Arguments: json.RawMessage(`{"delayMs":30000}`), Caller: alice, Transport: signals.TransportMCP})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []runs.AwaitOption
	}{{"every task", nil}, {"published only", []runs.AwaitOption{runs.PublishedOnly()}}} {
		polls.Store(0)
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		_, err := s.Await(ctx, alice, snap.RunID, terminal, tc.opts...)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: Await = %v, want the deadline", tc.name, err)
		}
		if n := polls.Load(); n > 10 {
			t.Errorf("%s: %d history calls in a 1.5 s wait, want a few", tc.name, n)
		}
	}
}
