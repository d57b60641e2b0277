package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// answer is the body of the versioning tests' tools.
func answer(workflow.Context, noInput) (string, error) { return "done", nil }

// TestIntegrationVersionedWorker: a Registry.Run worker given a deployment
// name and a build id is a version of a Temporal Worker Deployment. Once
// an operator makes it current, the runs it serves record its version, and
// each tool its versioning behavior: pinned by default, auto-upgrade where
// the tool chose it. Its publication names the version.
func TestIntegrationVersionedWorker(t *testing.T) {
	reg, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("versioned_pinned", "Answers at once; pinned by default.", answer),
		workflows.NewTool("versioned_auto", "Answers at once; moves to the current version.", answer,
			workflows.WithVersioningBehavior(workflow.VersioningBehaviorAutoUpgrade)),
	})
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	deployment := testenv.UniqueID("tools-")
	identity := "versioned@" + tq
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- reg.Run(runCtx, env.Client, tq, workflows.WorkerOptions{
			Worker: worker.Options{Identity: identity}, DeploymentName: deployment, BuildID: "v1",
		})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	setCurrent(t, env.Client, deployment, "v1")

	pub := publication(t, env.Client, tq, identity)
	if v := pub.Version; v == nil || v.DeploymentName != deployment || v.BuildID != "v1" {
		t.Errorf("publication's version = %+v, want %s.v1", v, deployment)
	}
	checkHeartbeatVersion(t, env, tq, identity, deployment)
	checkVersionMetadata(t, env, tq, deployment, "versioned_auto,versioned_pinned")
	s := &server{t: t, c: env.Client, tq: tq, reg: reg, env: env}
	for _, tc := range []struct {
		tool string
		want enumspb.VersioningBehavior
	}{
		{"versioned_pinned", enumspb.VERSIONING_BEHAVIOR_PINNED},
		{"versioned_auto", enumspb.VERSIONING_BEHAVIOR_AUTO_UPGRADE},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			id, run := s.start(tc.tool, map[string]any{})
			var rec signals.RunRecord
			if err := run.Get(ctx(t), &rec); err != nil {
				t.Fatal(err)
			}
			d, err := env.Client.DescribeWorkflowExecution(ctx(t), id, "")
			if err != nil {
				t.Fatal(err)
			}
			vi := d.GetWorkflowExecutionInfo().GetVersioningInfo()
			if got := vi.GetBehavior(); got != tc.want {
				t.Errorf("versioning behavior = %s, want %s", got, tc.want)
			}
			if v := vi.GetDeploymentVersion(); v.GetDeploymentName() != deployment || v.GetBuildId() != "v1" {
				t.Errorf("run's deployment version = %v, want %s.v1", v, deployment)
			}
		})
	}
}

// checkHeartbeatVersion checks that the worker's catalog heartbeats name
// its version (temporal worker list shows it).
func checkHeartbeatVersion(t *testing.T, env *testenv.Env, tq, identity, deployment string) {
	t.Helper()
	visibility.Require(t, "a catalog heartbeat naming the version", func(ctx context.Context) error {
		resp, err := env.Client.WorkflowService().ListWorkers(ctx, &workflowservice.ListWorkersRequest{
			Namespace: env.Namespace, Query: fmt.Sprintf("TaskQueue = '%s' AND WorkerIdentity = '%s'", tq, identity),
		})
		if err != nil {
			return err
		}
		//lint:ignore SA1019 the full heartbeat is only in workers_info (see catalog/workers.go).
		for _, info := range resp.GetWorkersInfo() {
			hb := info.GetWorkerHeartbeat()
			if hb.GetWorkerInstanceKey() != signals.PublicationID(tq, identity) {
				continue
			}
			if v := hb.GetDeploymentVersion(); v.GetDeploymentName() != deployment || v.GetBuildId() != "v1" {
				return fmt.Errorf("catalog heartbeat names version %v", v)
			}
			return nil
		}
		return errors.New("no catalog heartbeat")
	})
}

// checkVersionMetadata checks that the metadata of version v1 of the
// deployment names the tools its worker serves on tq.
func checkVersionMetadata(t *testing.T, env *testenv.Env, tq, deployment, want string) {
	t.Helper()
	h := env.Client.WorkerDeploymentClient().GetHandle(deployment)
	visibility.Require(t, "the tools in the version's metadata", func(ctx context.Context) error {
		d, err := h.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: "v1"})
		if err != nil {
			return err
		}
		p, ok := d.Info.Metadata[catalog.VersionMetadataKey(tq)]
		if !ok {
			return fmt.Errorf("metadata %v", d.Info.Metadata)
		}
		var names []string
		if err := converter.GetDefaultDataConverter().FromPayload(p, &names); err != nil {
			return err
		}
		if got := strings.Join(names, ","); got != want {
			return fmt.Errorf("tools %s", got)
		}
		return nil
	})
}

// setCurrent makes buildID the current version of deployment, as an
// operator does once the version's workers poll (Temporal creates the
// version at their first poll).
func setCurrent(t *testing.T, c client.Client, deployment, buildID string) {
	t.Helper()
	h := c.WorkerDeploymentClient().GetHandle(deployment)
	visibility.Require(t, "set the current version "+buildID, func(ctx context.Context) error {
		_, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: buildID})
		return err
	})
}

// publication reads the running publication of the worker identity on
// taskQueue.
func publication(t *testing.T, c client.Client, taskQueue, identity string) signals.Publication {
	t.Helper()
	var pub signals.Publication
	visibility.Require(t, "the worker's publication", func(ctx context.Context) error {
		d, err := c.DescribeWorkflowExecution(ctx, signals.PublicationID(taskQueue, identity), "")
		if err != nil {
			return err
		}
		field, ok := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[signals.MemoPublication]
		if !ok {
			return errors.New("no publication memo")
		}
		return converter.GetDefaultDataConverter().FromPayload(field, &pub)
	})
	return pub
}

// TestVersioningOptionsRefused: a worker's deployment version and a tool's
// versioning behavior are checked before anything starts.
func TestVersioningOptionsRefused(t *testing.T) {
	if err := workflows.NewTool("bad_behavior", "d", answer, workflows.WithVersioningBehavior(workflow.VersioningBehaviorUnspecified)).Err(); err == nil ||
		!strings.Contains(err.Error(), "neither pinned nor auto-upgrade") {
		t.Errorf("unspecified behavior: err = %v", err)
	}
	reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("versioned_bad", "d", answer)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		opts    workflows.WorkerOptions
		wantErr string
	}{
		{"name without build id", workflows.WorkerOptions{DeploymentName: "tools"}, "both a deployment name and a build id"},
		{"build id without name", workflows.WorkerOptions{BuildID: "v1"}, "both a deployment name and a build id"},
		{"dot in the name", workflows.WorkerOptions{DeploymentName: "my.tools", BuildID: "v1"}, `without "."`},
		{"two versions", workflows.WorkerOptions{DeploymentName: "tools", BuildID: "v1", Worker: worker.Options{
			DeploymentOptions: worker.DeploymentOptions{UseVersioning: true, Version: worker.WorkerDeploymentVersion{DeploymentName: "tools", BuildID: "v2"}},
		}}, "differs from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Refused before the client is used.
			err := reg.Run(context.Background(), nil, "q", tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Run = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
