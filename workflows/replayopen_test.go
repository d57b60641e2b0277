package workflows_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// stamp is the activity of the shipping tools.
func stamp(context.Context) (string, error) { return "stamped", nil }

// shipRegistry is a registry of the tool name, build v1 (approve, then
// stamp) or v2 (stamp, then approve: a reordered step).
func shipRegistry(t *testing.T, name, build string) *workflows.Registry {
	t.Helper()
	approve := func(ctx workflow.Context) error {
		_, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "approve", Title: "Ship?"})
		return err
	}
	stampIt := func(ctx workflow.Context) error { return workflow.ExecuteActivity(ctx, stamp).Get(ctx, nil) }
	steps := []func(workflow.Context) error{approve, stampIt}
	if build == "v2" {
		steps = []func(workflow.Context) error{stampIt, approve}
	}
	reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool(name, "Ship an order once approved.",
		func(ctx workflow.Context, _ noInput) (string, error) {
			for _, s := range steps {
				if err := s(ctx); err != nil {
					return "", err
				}
			}
			return build, nil
		}, workflows.Suspends())}, stamp)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestIntegrationReplayOpen: workflowstest.ReplayOpen replays the open
// runs of a tool with the code of the next build and says which the change
// would break: every run of an unversioned worker whose step was moved, and
// none pinned to another version (they finish on their own build).
func TestIntegrationReplayOpen(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deployment bool
		// wantBreaks is what Breaks says of each run for v2.
		wantBreaks bool
	}{
		{"unversioned", false, true},
		{"pinned to v1", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.Temporal(t)
			tq := testenv.UniqueTaskQueue(t)
			name := "ship_" + strings.ReplaceAll(tc.name, " ", "_")
			opts := workflows.WorkerOptions{}
			newVersion := ""
			if tc.deployment {
				opts.DeploymentName, opts.BuildID = testenv.UniqueID("ship-"), "v1"
				newVersion = opts.DeploymentName + ".v2"
			}
			v1 := shipRegistry(t, name, "v1")
			runWorkerOf(t, env, v1, tq, opts)
			if tc.deployment {
				setCurrent(t, env.Client, opts.DeploymentName, "v1")
			}
			s := &server{t: t, c: env.Client, tq: tq, reg: v1, env: env}
			for range 2 {
				id, _ := s.start(name, map[string]any{})
				s.await(id, func(x signals.Snapshot) bool { return len(x.Interrupts) == 1 })
			}

			query := fmt.Sprintf("TaskQueue = '%s'", tq)
			same := replayOpen(t, env, v1, query, 2)
			for _, r := range same {
				if r.Err != nil || r.Breaks(newVersion) || r.Tool != name {
					t.Errorf("v1's code on its own run %+v: want it replayed", r)
				}
			}
			for _, r := range replayOpen(t, env, shipRegistry(t, name, "v2"), query, 2) {
				if r.Err == nil || !strings.Contains(r.Err.Error(), "TMPRL1100") {
					t.Errorf("v2's code on run %s: err = %v, want a nondeterminism error", r.WorkflowID, r.Err)
				}
				if got := r.Breaks(newVersion); got != tc.wantBreaks {
					t.Errorf("run %+v: Breaks(%q) = %t, want %t", r, newVersion, got, tc.wantBreaks)
				}
				if tc.deployment && (!r.Pinned || r.Version != opts.DeploymentName+".v1") {
					t.Errorf("run %+v: want it pinned to %s.v1", r, opts.DeploymentName)
				}
			}
		})
	}
}

// replayOpen is workflowstest.ReplayOpen once visibility lists n runs.
func replayOpen(t *testing.T, env *testenv.Env, reg *workflows.Registry, query string, n int) []workflowstest.OpenRun {
	t.Helper()
	var runs []workflowstest.OpenRun
	visibility.Require(t, fmt.Sprintf("%d open runs replayed", n), func(ctx context.Context) error {
		var err error
		if runs, err = workflowstest.ReplayOpen(ctx, env.Client, reg, query); err != nil {
			return err
		}
		if len(runs) != n {
			return fmt.Errorf("%d runs listed", len(runs))
		}
		return nil
	})
	return runs
}

// runWorkerOf runs reg with opts on tq until the end of the test.
func runWorkerOf(t *testing.T, env *testenv.Env, reg *workflows.Registry, tq string, opts workflows.WorkerOptions) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(ctx, env.Client, tq, opts) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
}
