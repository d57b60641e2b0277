package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// TestFailedStartLeavesNoUnknownRun injects start calls that fail after
// (or before) the request reached Temporal, as a timeout or a lost
// connection does, and checks that the run either reaches its caller (it
// is still waiting) or is cancelled with reason start-failed (it is gone),
// and that a start that never arrived answers its error.
func TestFailedStartLeavesNoUnknownRun(t *testing.T) {
	env := testenv.Temporal(t)
	tq := exampleWorker(t, env)

	cases := []struct {
		name      string
		code      codes.Code
		forward   bool
		describes int  // describe calls that fail after the start failed
		leave     bool // the caller's context ends during the start call
		// want: the status the run ends in ("" when it must not exist) and
		// whether Start answers it.
		want    signals.Status
		started bool
	}{
		{name: "timeout, caller waiting", code: codes.DeadlineExceeded, forward: true, want: signals.StatusCompleted, started: true},
		{name: "unavailable, caller waiting", code: codes.Unavailable, forward: true, want: signals.StatusCompleted, started: true},
		{name: "timeout, caller gone", code: codes.DeadlineExceeded, forward: true, leave: true, want: signals.StatusCancelled},
		{name: "lost connection, caller gone, describe fails", code: codes.Unavailable, forward: true, leave: true, describes: 3, want: signals.StatusCancelled},
		{name: "timeout, caller waiting, describe fails", code: codes.DeadlineExceeded, forward: true, describes: 3, want: signals.StatusCompleted, started: true},
		{name: "never arrived", code: codes.Unavailable, forward: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			faults := &testenv.Faults{}
			svc := runs.New(env.DialFaulty(t, faults), env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
			ctx, leave := context.WithCancel(ctxT(t))
			defer leave()
			faults.FailStarts(func(string) (testenv.StartFault, bool) {
				return testenv.StartFault{Code: tc.code, Forward: tc.forward, After: func(string) {
					faults.FailDescribes(tc.describes, codes.Unavailable)
					if tc.leave {
						leave()
					}
				}}, true
			})
			snap, err := svc.Start(ctx, runs.NewRun{Tool: signals.ToolSpec{Name: "conformance-delay"},
				Arguments: json.RawMessage(`{"delayMs":1500}`), Caller: alice, Transport: signals.TransportMCP})
			failed := faults.Failed()
			if len(failed) != 1 {
				t.Fatalf("injected start failures: %v", failed)
			}
			id := failed[0]
			if tc.started {
				if err != nil || snap.RunID != id {
					t.Fatalf("Start = %+v, %v; want run %s answered as started", snap, err, id)
				}
			} else if err == nil {
				t.Fatalf("Start = %+v; want the start error", snap)
			}

			// Read the run on a client without faults.
			reader := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
			final, err := reader.Await(ctxT(t), alice, id, func(s signals.Snapshot) bool { return s.Status.Terminal() })
			if tc.want == "" {
				if !errors.Is(err, runs.ErrNotFound) {
					t.Fatalf("run %s of a start that never arrived: %+v, %v; want ErrNotFound", id, final, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("await run %s: %v", id, err)
			}
			if final.Status != tc.want {
				t.Fatalf("run %s ended %s (reason %q); want %s", id, final.Status, final.CancelReason, tc.want)
			}
			if tc.want == signals.StatusCancelled && final.CancelReason != signals.ReasonStartFailed {
				t.Fatalf("run %s cancelled with reason %q; want %q", id, final.CancelReason, signals.ReasonStartFailed)
			}
		})
	}
}
