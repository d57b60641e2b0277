package workflows

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestWorkerOptionsVersion: the deployment version a worker serves and
// the versioning behavior its tools default to, from DeploymentName and
// BuildID or from Worker.DeploymentOptions.
func TestWorkerOptionsVersion(t *testing.T) {
	v1 := worker.WorkerDeploymentVersion{DeploymentName: "tools", BuildID: "v1"}
	for _, tc := range []struct {
		name         string
		opts         WorkerOptions
		wantVersion  string // "" for an unversioned worker
		wantBehavior workflow.VersioningBehavior
	}{
		{"unversioned", WorkerOptions{}, "", workflow.VersioningBehaviorUnspecified},
		{"deployment name and build id", WorkerOptions{DeploymentName: "tools", BuildID: "v1"}, "tools.v1", workflow.VersioningBehaviorPinned},
		{"Worker.DeploymentOptions", WorkerOptions{Worker: worker.Options{DeploymentOptions: worker.DeploymentOptions{UseVersioning: true, Version: v1}}},
			"tools.v1", workflow.VersioningBehaviorPinned},
		{"Worker.DeploymentOptions with its own default", WorkerOptions{Worker: worker.Options{DeploymentOptions: worker.DeploymentOptions{
			UseVersioning: true, Version: v1, DefaultVersioningBehavior: workflow.VersioningBehaviorAutoUpgrade}}},
			"tools.v1", workflow.VersioningBehaviorAutoUpgrade},
		{"both, the same version", WorkerOptions{DeploymentName: "tools", BuildID: "v1",
			Worker: worker.Options{DeploymentOptions: worker.DeploymentOptions{UseVersioning: true, Version: v1}}},
			"tools.v1", workflow.VersioningBehaviorPinned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			v, err := opts.version()
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if v != nil {
				got = v.String()
			}
			d := opts.Worker.DeploymentOptions
			if got != tc.wantVersion || d.DefaultVersioningBehavior != tc.wantBehavior || d.UseVersioning != (tc.wantVersion != "") {
				t.Errorf("version %q, options %+v; want %q, default behavior %d", got, d, tc.wantVersion, tc.wantBehavior)
			}
		})
	}
}
