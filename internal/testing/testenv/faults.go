package testenv

import (
	"context"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
)

// Faults injects failures into the Temporal calls of a client dialed with
// DialFaulty, as a network or an overloaded server would: a start call
// whose request reached the server (the workflow exists) but whose caller
// is answered an error, or a describe call that fails. Arm it with
// FailStarts and FailDescribes; it is safe for concurrent use.
type Faults struct {
	mu sync.Mutex
	// starts decides, for each StartWorkflowExecution, whether to fail it;
	// nil fails none.
	starts func(workflowID string) (StartFault, bool)
	// describes is the number of DescribeWorkflowExecution calls still to
	// fail with describeCode.
	describes    int
	describeCode codes.Code
	// failed holds the workflow IDs of the starts that failed; seen those
	// of every start call.
	failed, seen []string
}

// StartFault is how a start call fails.
type StartFault struct {
	// Code is the gRPC status the caller gets, e.g. codes.DeadlineExceeded
	// or codes.Unavailable. codes.OK fails nothing: the caller gets the
	// server's answer once After returned (to hold a start in progress).
	Code codes.Code
	// Forward sends the request to the server first (the workflow then
	// exists); otherwise the request never leaves the client.
	Forward bool
	// After, when set, runs once the forwarded call returned, before the
	// caller gets the error (e.g. to cancel the caller's request).
	After func(workflowID string)
}

// FailStarts makes every start for which decide reports true fail as the
// StartFault says (nil: fail none).
func (f *Faults) FailStarts(decide func(workflowID string) (StartFault, bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = decide
}

// FailDescribes makes the next n describe calls fail with code.
func (f *Faults) FailDescribes(n int, code codes.Code) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.describes, f.describeCode = n, code
}

// Failed returns the workflow IDs of the start calls that were failed.
func (f *Faults) Failed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.failed...)
}

// Starts returns the workflow IDs of every start call made, in order.
func (f *Faults) Starts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// intercept is the outermost unary interceptor of the client: it sits
// outside the SDK's own retries, so the caller sees exactly the injected
// error.
func (f *Faults) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	switch {
	case strings.HasSuffix(method, "/StartWorkflowExecution"):
		sreq, _ := req.(*workflowservice.StartWorkflowExecutionRequest)
		f.mu.Lock()
		decide := f.starts
		f.seen = append(f.seen, sreq.GetWorkflowId())
		f.mu.Unlock()
		if decide == nil || sreq == nil {
			break
		}
		fault, ok := decide(sreq.GetWorkflowId())
		if !ok {
			break
		}
		var err error
		if fault.Forward || fault.Code == codes.OK {
			err = invoker(ctx, method, req, reply, cc, opts...)
		}
		if err == nil && fault.Code != codes.OK {
			f.mu.Lock()
			f.failed = append(f.failed, sreq.GetWorkflowId())
			f.mu.Unlock()
		}
		if fault.After != nil {
			fault.After(sreq.GetWorkflowId())
		}
		if err != nil || fault.Code == codes.OK {
			return err
		}
		return status.Error(fault.Code, "testenv: injected start failure")
	case strings.HasSuffix(method, "/DescribeWorkflowExecution"):
		f.mu.Lock()
		fail := f.describes > 0
		code := f.describeCode
		if fail {
			f.describes--
		}
		f.mu.Unlock()
		if fail {
			return status.Error(code, "testenv: injected describe failure")
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// DialFaulty dials a new client of the server whose calls go through f.
// It is closed when the test ends.
func (e *Env) DialFaulty(t testing.TB, f *Faults) client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  e.Address,
		Namespace: e.Namespace,
		Logger:    devtemporal.SDKLogger(e.Logger),
		ConnectionOptions: client.ConnectionOptions{
			// WithUnaryInterceptor (not the chain option) puts f outside
			// the SDK's interceptors, retries included.
			DialOptions: []grpc.DialOption{grpc.WithUnaryInterceptor(f.intercept)},
		},
	})
	if err != nil {
		t.Fatalf("testenv: dial %s: %v", e.Address, err)
	}
	t.Cleanup(c.Close)
	return c
}
