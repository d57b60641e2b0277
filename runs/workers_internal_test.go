package runs

import (
	"strings"
	"testing"

	deploymentpb "go.temporal.io/api/deployment/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/openwop/temporal-mcp/signals"
)

// TestServedBy is the table of what serves a run: any worker of its task
// queue, or only the workers of the version it is pinned to, by its
// behaviour or by an override.
func TestServedBy(t *testing.T) {
	v := func(build string) *deploymentpb.WorkerDeploymentVersion {
		return &deploymentpb.WorkerDeploymentVersion{DeploymentName: "refunds", BuildId: build}
	}
	pinned := func(build string) target {
		return target{queue: "q", version: signals.DeploymentVersion{DeploymentName: "refunds", BuildID: build}}
	}
	tests := []struct {
		name string
		vi   *workflowpb.WorkflowExecutionVersioningInfo
		want target
	}{
		{"unversioned", nil, target{queue: "q"}},
		{"pinned", &workflowpb.WorkflowExecutionVersioningInfo{Behavior: enumspb.VERSIONING_BEHAVIOR_PINNED, DeploymentVersion: v("v1")}, pinned("v1")},
		{"auto-upgrade", &workflowpb.WorkflowExecutionVersioningInfo{Behavior: enumspb.VERSIONING_BEHAVIOR_AUTO_UPGRADE, DeploymentVersion: v("v1")}, target{queue: "q"}},
		{"moved by a pinned override", &workflowpb.WorkflowExecutionVersioningInfo{Behavior: enumspb.VERSIONING_BEHAVIOR_PINNED, DeploymentVersion: v("v1"),
			VersioningOverride: &workflowpb.VersioningOverride{Override: &workflowpb.VersioningOverride_Pinned{
				Pinned: &workflowpb.VersioningOverride_PinnedOverride{Version: v("v2")}}}}, pinned("v2")},
		{"an auto-upgrade override", &workflowpb.WorkflowExecutionVersioningInfo{Behavior: enumspb.VERSIONING_BEHAVIOR_PINNED, DeploymentVersion: v("v1"),
			VersioningOverride: &workflowpb.VersioningOverride{Override: &workflowpb.VersioningOverride_AutoUpgrade{AutoUpgrade: true}}}, target{queue: "q"}},
		{"started with a one-time override", &workflowpb.WorkflowExecutionVersioningInfo{
			VersioningOverride: &workflowpb.VersioningOverride{Override: &workflowpb.VersioningOverride_OneTime{
				OneTime: &workflowpb.VersioningOverride_OneTimeOverride{TargetDeploymentVersion: v("v2")}}}}, pinned("v2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := servedBy(&workflowpb.WorkflowExecutionInfo{TaskQueue: "q", VersioningInfo: tt.vi})
			if got != tt.want {
				t.Fatalf("servedBy = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestStalledNamesTheBuild: the status message of a stalled pinned run
// names its build, deployment and queue; an unpinned one its queue.
func TestStalledNamesTheBuild(t *testing.T) {
	msg := stalled("waiting for approval", target{queue: "q", version: signals.DeploymentVersion{DeploymentName: "refunds", BuildID: "v1"}})
	for _, want := range []string{"waiting for approval; stalled", `build "v1" of worker deployment "refunds"`, `task queue "q"`, "moves it to the current version"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stalled = %q, want %q in it", msg, want)
		}
	}
	if msg := stalled("working", target{queue: "q"}); msg != `working; stalled: no worker polls task queue "q", so the run waits until one does` {
		t.Errorf("stalled of an unpinned run = %q", msg)
	}
}
