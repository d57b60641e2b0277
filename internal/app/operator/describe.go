package operator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/openwop/temporal-mcp/catalog"
)

func describeCommand() command {
	return command{
		name: "describe", args: "[-deployment NAME]",
		summary: "Without -deployment, lists the Worker Deployments and their current and ramping versions. With it, lists\n" +
			"the deployment's versions: which is current or ramping, their drainage (drained: no open run is pinned\n" +
			"to it any more, so its workers may stop), the open runs pinned to each, and the tools each serves.",
		flags: func(fs *flag.FlagSet) func(context.Context, client.Client, io.Writer) error {
			name := fs.String("deployment", "", "the Worker Deployment (TEMPORAL_DEPLOYMENT_NAME of its workers)")
			return func(ctx context.Context, c client.Client, out io.Writer) error {
				if *name == "" {
					return listDeployments(ctx, c, out)
				}
				return describeDeployment(ctx, c, *name, out)
			}
		},
	}
}

// listDeployments writes one line per Worker Deployment.
func listDeployments(ctx context.Context, c client.Client, out io.Writer) error {
	it, err := c.WorkerDeploymentClient().List(ctx, client.WorkerDeploymentListOptions{})
	if err != nil {
		return fmt.Errorf("list worker deployments: %w", err)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "DEPLOYMENT\tCURRENT\tRAMPING")
	for it.HasNext() {
		d, err := it.Next()
		if err != nil {
			return fmt.Errorf("list worker deployments: %w", err)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", d.Name, buildOf(d.RoutingConfig.CurrentVersion), ramping(d.RoutingConfig))
	}
	return w.Flush()
}

// describeDeployment writes the versions of the deployment name.
func describeDeployment(ctx context.Context, c client.Client, name string, out io.Writer) error {
	h := c.WorkerDeploymentClient().GetHandle(name)
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return fmt.Errorf("describe worker deployment %q: %w", name, err)
	}
	rc := d.Info.RoutingConfig
	fmt.Fprintf(out, "deployment %s: current %s, ramping %s\n", name, buildOf(rc.CurrentVersion), ramping(rc))
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "BUILD\tROLE\tDRAINAGE\tPINNED RUNS\tCREATED\tTOOLS")
	versions := slices.Clone(d.Info.VersionSummaries)
	slices.SortFunc(versions, func(a, b client.WorkerDeploymentVersionSummary) int { return a.CreateTime.Compare(b.CreateTime) })
	for _, v := range versions {
		role := "-"
		switch {
		case rc.CurrentVersion != nil && rc.CurrentVersion.BuildID == v.Version.BuildID:
			role = "current"
		case rc.RampingVersion != nil && rc.RampingVersion.BuildID == v.Version.BuildID:
			role = fmt.Sprintf("ramping %g%%", rc.RampingVersionPercentage)
		}
		pinned, err := countPinned(ctx, c, name, v.Version.BuildID)
		if err != nil {
			return err
		}
		tools, err := versionTools(ctx, h, v.Version.BuildID)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", v.Version.BuildID, role, drainage(v.DrainageStatus), pinned,
			v.CreateTime.UTC().Format(time.RFC3339), tools)
	}
	return w.Flush()
}

// pinnedQuery is the visibility query of the open runs pinned to a
// version: Temporal's own search attributes, set on each run by its
// workflow tasks (and by a versioning override).
func pinnedQuery(deployment, build string) string {
	return fmt.Sprintf("TemporalWorkerDeploymentVersion = '%s:%s' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'",
		quote(deployment), quote(build))
}

// quote escapes s for a single-quoted string of a visibility query.
func quote(s string) string { return strings.ReplaceAll(s, "'", `\'`) }

// countPinned counts the open runs pinned to the version.
func countPinned(ctx context.Context, c client.Client, deployment, build string) (int64, error) {
	resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: pinnedQuery(deployment, build)})
	if err != nil {
		return 0, fmt.Errorf("count the runs pinned to build %q: %w", build, err)
	}
	return resp.GetCount(), nil
}

// versionTools are the tools the version serves, by task queue, as its
// workers recorded them in its metadata (catalog.RecordVersionTools).
func versionTools(ctx context.Context, h client.WorkerDeploymentHandle, build string) (string, error) {
	d, err := h.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: build})
	if err != nil {
		return "", fmt.Errorf("describe build %q: %w", build, err)
	}
	var parts []string
	for _, tq := range d.Info.TaskQueuesInfos {
		p, ok := d.Info.Metadata[catalog.VersionMetadataKey(tq.Name)]
		var names []string
		if !ok || converter.GetDefaultDataConverter().FromPayload(p, &names) != nil {
			continue
		}
		parts = append(parts, tq.Name+": "+strings.Join(names, ","))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "-", nil
	}
	return strings.Join(slices.Compact(parts), "; "), nil
}

// buildOf is the build id of v, or "none".
func buildOf(v *worker.WorkerDeploymentVersion) string {
	if v == nil || v.BuildID == "" {
		return "none (unversioned workers)"
	}
	return v.BuildID
}

// ramping says which version ramps, at what share.
func ramping(rc client.WorkerDeploymentRoutingConfig) string {
	if rc.RampingVersionPercentage == 0 {
		return "none"
	}
	return fmt.Sprintf("%s at %g%%", buildOf(rc.RampingVersion), rc.RampingVersionPercentage)
}

// drainage names a drainage status.
func drainage(s client.WorkerDeploymentVersionDrainageStatus) string {
	switch s {
	case client.WorkerDeploymentVersionDrainageStatusDraining:
		return "draining"
	case client.WorkerDeploymentVersionDrainageStatusDrained:
		return "drained"
	}
	return "-"
}
