package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/workflows"
)

// runVersioned runs reg on taskQueue as build buildID of the Worker
// Deployment deployment, with the given identity, until stop or the end of
// the test.
func runVersioned(t *testing.T, c client.Client, reg *workflows.Registry, taskQueue, identity, deployment, buildID string) *runningWorker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &runningWorker{cancel: cancel, done: make(chan error, 1)}
	go func() {
		w.done <- reg.Run(ctx, c, taskQueue, workflows.WorkerOptions{
			Worker: worker.Options{Identity: identity}, DeploymentName: deployment, BuildID: buildID,
		})
	}()
	t.Cleanup(func() { _ = w.stop() })
	return w
}

// setCurrent makes buildID the current version of deployment, as an
// operator does once the version's workers poll (Temporal knows a version
// from its workers' first poll), and returns when Temporal accepted it.
func setCurrent(t *testing.T, c client.Client, deployment, buildID string) time.Time {
	t.Helper()
	h := c.WorkerDeploymentClient().GetHandle(deployment)
	visibility.Require(t, "make "+buildID+" current", func(ctx context.Context) error {
		_, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: buildID})
		return err
	})
	return time.Now()
}

// TestLiveVersionedRollout: two builds of one Worker Deployment publish
// different specs of one tool without a conflict; the catalog lists the
// spec of the deployment's current version, read from Temporal: none
// before an operator sets one, v1's, then within seconds of the promotion
// v2's, with no restart; while v2's only worker is down a call is refused
// as unavailable, not routed to v1.
func TestLiveVersionedRollout(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	tq := testenv.UniqueTaskQueue(t)
	name, deployment := unique("rollout"), unique("tools")
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(want string) func() (bool, string) {
		return func() (bool, string) {
			tool, err := live.ForCall(ctx, name)
			if err != nil {
				return strings.Contains(err.Error(), want), fmt.Sprintf("Lookup: %v", err)
			}
			return tool.Spec().Description == want, fmt.Sprintf("listed %q", tool.Spec().Description)
		}
	}

	v1 := runVersioned(t, env.Client, newRegistry(t, echoTool(name, "Version one.", "v1")), tq, "w-v1", deployment, "v1")
	eventually(t, waitBound, "unavailable while the deployment has no current version", lookup("has no current version"))
	setCurrent(t, env.Client, deployment, "v1")
	eventually(t, waitBound, "v1 listed once current", lookup("Version one."))

	// v2 changes the spec: a rollout, so its Publish succeeds, and the
	// catalog goes on listing v1 until v2 is current.
	v2 := runVersioned(t, env.Client, newRegistry(t, echoTool(name, "Version two.", "v2", workflows.WithTitle("Echo, second edition"))),
		tq, "w-v2", deployment, "v2")
	eventually(t, waitBound, "v2 published", func() (bool, string) {
		if err, done := v2.failedEarly(); done {
			t.Fatalf("v2's Run returned: %v", err)
		}
		st := publicationStatus(t, env.Client, tq, "w-v2")
		return st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
	})
	if ok, state := lookup("Version one.")(); !ok {
		t.Fatalf("before v2 is current: %s, want v1's spec", state)
	}
	promoted := setCurrent(t, env.Client, deployment, "v2")
	eventually(t, waitBound, "v2 listed once current", lookup("Version two."))
	t.Logf("v2 listed %s after SetCurrentVersion returned", time.Since(promoted).Round(time.Millisecond))
	if tools, err := live.Tools(ctx); err != nil || !hasTool(tools, name) {
		t.Fatalf("Tools = %v, %v: want the tool listed", tools, err)
	}

	// v2's only worker stops: calls are refused, v1 live or not.
	if err := v2.stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitBound, "refused while v2 has no live worker", lookup(`no live worker of version "v2"`))
	_, err = live.ForCall(ctx, name)
	if unav := unavailable(t, err, name); !strings.Contains(unav.Reason, `live versions: "v1"`) {
		t.Errorf("reason %q does not name the live version v1", unav.Reason)
	}
	if err, done := v1.failedEarly(); done {
		t.Fatalf("v1's Run returned: %v", err)
	}
}

// hasTool reports whether tools has one named name.
func hasTool(tools []*catalog.Tool, name string) bool {
	for _, t := range tools {
		if t.Name() == name {
			return true
		}
	}
	return false
}

// TestPublishVersionConflicts: Publish, through Registry.Run, refuses a
// different spec of another deployment while accepting one of another
// version of its own.
func TestPublishVersionConflicts(t *testing.T) {
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	name, d1, d2 := unique("vconflict"), unique("tools"), unique("other")
	a := runVersioned(t, env.Client, newRegistry(t, echoTool(name, "Spec one.", "a")), tq, "w-a", d1, "v1")
	eventually(t, waitBound, "a published", func() (bool, string) {
		if err, done := a.failedEarly(); done {
			t.Fatalf("a's Run returned: %v", err)
		}
		st := publicationStatus(t, env.Client, tq, "w-a")
		return st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
	})
	for _, tc := range []struct {
		name, deployment, build string
		wantConflict            bool
	}{
		{"another version of the deployment", d1, "v2", false},
		{"another deployment", d2, "v1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := unique("w")
			w := runVersioned(t, env.Client, newRegistry(t, echoTool(name, "Spec two.", "b")), tq, id, tc.deployment, tc.build)
			var conflict *catalog.ConflictError
			eventually(t, waitBound, "published or refused", func() (bool, string) {
				if err, done := w.failedEarly(); done {
					if !tc.wantConflict || !errors.As(err, &conflict) {
						t.Fatalf("Run = %v", err)
					}
					return true, ""
				}
				st := publicationStatus(t, env.Client, tq, id)
				return !tc.wantConflict && st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
			})
			if tc.wantConflict && !strings.Contains(conflict.Error(), fmt.Sprintf("version %q", d1+".v1")) {
				t.Errorf("conflict %q does not name the other worker's version", conflict)
			}
		})
	}
}

// TestOtherVersionsRecentFor: after a version's workers stop, its spec
// stays among the tool's other versions (its runs' results are checked
// against it: CheckOutput) for RecentFor after its publication
// closed, and no longer; the listed version's spec is never among them.
func TestOtherVersionsRecentFor(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	tq := testenv.UniqueTaskQueue(t)
	name, deployment := unique("recent"), unique("tools")
	const recent = 8 * time.Second
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{RecentFor: recent})
	if err != nil {
		t.Fatal(err)
	}
	others := func() (string, error) {
		if err := live.Refresh(ctx); err != nil {
			return "", err
		}
		var ds []string
		for _, o := range live.OtherVersions(name) {
			ds = append(ds, o.Spec().Description)
		}
		return strings.Join(ds, ","), nil
	}
	v1 := runVersioned(t, env.Client, newRegistry(t, echoTool(name, "Version one.", "v1")), tq, "w-v1", deployment, "v1")
	setCurrent(t, env.Client, deployment, "v1")
	runVersioned(t, env.Client, newRegistry(t, echoTool(name, "Version two.", "v2", workflows.WithTitle("Echo, second edition"))),
		tq, "w-v2", deployment, "v2")
	setCurrent(t, env.Client, deployment, "v2")
	eventually(t, waitBound, "v1 among the other versions while it runs", func() (bool, string) {
		got, err := others()
		return got == "Version one.", fmt.Sprintf("others %q, %v", got, err)
	})

	stopped := time.Now() // before the publication closes
	if err := v1.stop(); err != nil {
		t.Fatal(err)
	}
	if got, err := others(); got != "Version one." {
		t.Fatalf("just after v1 stopped: others %q, %v; want v1's spec", got, err)
	}
	eventually(t, recent+waitBound, "v1 gone from the other versions", func() (bool, string) {
		got, err := others()
		return got == "", fmt.Sprintf("others %q, %v", got, err)
	})
	if gone := time.Since(stopped); gone < recent {
		t.Fatalf("v1's spec left the other versions %s after its worker stopped, before RecentFor (%s)", gone, recent)
	} else {
		t.Logf("v1's spec left the other versions %s after its worker stopped (RecentFor %s)", gone.Round(time.Millisecond), recent)
	}
}
