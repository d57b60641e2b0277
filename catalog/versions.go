package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/openwop/temporal-mcp/signals"
)

// routing is what Temporal says of where a Worker Deployment's new runs
// go (docs/catalog.md#versions).
type routing struct {
	// known is false when the deployment could not be described (the
	// server or the credentials do not allow it): its versions are then
	// all taken as current, as unversioned workers are.
	known bool
	// current is the build id of the deployment's current version; empty
	// when there is none and new runs of its task queues go to
	// unversioned workers.
	current string
	// ramping is the build id of the version the deployment ramps to from
	// its current version, percent the share of new runs Temporal sends
	// it; empty when none ramps (or the ramp is to or from unversioned
	// workers, which the catalog does not follow).
	ramping string
	percent float32
	// toUnversioned is set when the deployment ramps from its current
	// version to unversioned workers: Temporal routes those calls.
	toUnversioned bool
}

// routesOf describes each Worker Deployment among pubs (their versions)
// and returns where its new runs go. A deployment Temporal does not know
// (its workers have not polled yet) has no current version.
func routesOf(ctx context.Context, c client.Client, pubs []listed) (map[string]routing, error) {
	out := map[string]routing{}
	for _, p := range pubs {
		v := p.pub.Version
		if v == nil || v.DeploymentName == "" {
			continue
		}
		if _, ok := out[v.DeploymentName]; ok {
			continue
		}
		desc, err := c.WorkerDeploymentClient().GetHandle(v.DeploymentName).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
		var nf *serviceerror.NotFound
		var unimpl *serviceerror.Unimplemented
		var denied *serviceerror.PermissionDenied
		switch {
		case errors.As(err, &nf):
			out[v.DeploymentName] = routing{known: true}
		case errors.As(err, &unimpl), errors.As(err, &denied):
			out[v.DeploymentName] = routing{}
		case err != nil:
			return nil, fmt.Errorf("describe worker deployment %q: %w", v.DeploymentName, err)
		default:
			r := routing{known: true}
			rc := desc.Info.RoutingConfig
			if cur := rc.CurrentVersion; cur != nil {
				r.current = cur.BuildID
				switch ramp := rc.RampingVersion; {
				case ramp != nil:
					r.ramping, r.percent = ramp.BuildID, rc.RampingVersionPercentage
				case rc.RampingVersionPercentage > 0:
					r.toUnversioned = true
				}
			}
			out[v.DeploymentName] = r
		}
	}
	return out, nil
}

// takingNewRuns returns the live candidates of one tool whose workers take
// its new runs as Temporal routes them: of a versioned worker, those of
// its deployment's current version (every version when the deployment's
// routing is unknown); of an unversioned worker or a declaration, those
// whose task queue no candidate's deployment with a current version
// claims (Temporal routes the new runs of such a queue to that version).
// Candidates left out serve the runs that are already theirs: a rollout,
// not a conflict. When none takes new runs, why says so.
func takingNewRuns(cands []candidate, routes map[string]routing) (take []candidate, why string) {
	claimed := map[string]string{} // task queue -> the deployment whose current version gets its new runs
	for _, c := range cands {
		if v := c.version(); v != nil {
			if r := routes[v.DeploymentName]; r.known && r.current != "" {
				claimed[c.spec.TaskQueue] = v.DeploymentName
			}
		}
	}
	var live []candidate
	for _, c := range cands {
		if !c.live {
			continue
		}
		live = append(live, c)
		v := c.version()
		switch r := routes[deploymentOf(v)]; {
		case v == nil && claimed[c.spec.TaskQueue] == "":
			take = append(take, c)
		case v != nil && (!r.known || r.current == v.BuildID):
			take = append(take, c)
		}
	}
	if len(take) > 0 || len(live) == 0 {
		return take, ""
	}
	return nil, noCurrentWorker(live, routes, claimed)
}

// noCurrentWorker says why none of the live candidates of a tool takes its
// new runs.
func noCurrentWorker(live []candidate, routes map[string]routing, claimed map[string]string) string {
	c := live[0]
	q := c.spec.TaskQueue
	d := claimed[q]
	if v := c.version(); d == "" && v != nil {
		d = v.DeploymentName
	}
	var builds []string
	seen := map[string]bool{}
	for _, o := range live {
		if v := o.version(); v != nil && v.DeploymentName == d && !seen[v.BuildID] {
			seen[v.BuildID] = true
			builds = append(builds, fmt.Sprintf("%q", v.BuildID))
		}
	}
	sort.Strings(builds)
	if r := routes[d]; r.current == "" {
		return fmt.Sprintf("worker deployment %q has no current version, so new runs of task queue %q go to unversioned workers, and none is live (live versions: %s); make one current (openwop-server versions set-current, or temporal worker deployment set-current-version --yes)",
			d, q, strings.Join(builds, ", "))
	}
	live0 := "none"
	if len(builds) > 0 {
		live0 = strings.Join(builds, ", ")
	}
	return fmt.Sprintf("no live worker of version %q, the current version of worker deployment %q, serves the tool on task queue %q (live versions: %s); start one, or make a live version current",
		routes[d].current, d, q, live0)
}

// version is the deployment version of the candidate's worker, nil for an
// unversioned worker or a declaration.
func (c candidate) version() *signals.DeploymentVersion {
	if c.pub == nil {
		return nil
	}
	return c.pub.pub.Version
}

// deploymentOf is the name of v's deployment ("" for none).
func deploymentOf(v *signals.DeploymentVersion) string {
	if v == nil {
		return ""
	}
	return v.DeploymentName
}

// OtherVersions implements Source: the specs of a tool that the live
// workers of older versions serve during a rollout.
func (l *Live) OtherVersions(name string) []*Tool {
	l.mu.Lock()
	v := l.view
	l.mu.Unlock()
	if v == nil {
		return nil
	}
	return v.others[name]
}

// otherSpecs compiles the specs other than listed's that the running
// versioned publications of a tool publish (those of versions that take
// no new runs: the candidates that do agree with listed), live or not (a
// crashed worker's publication runs until DeadAfter after its last poll),
// and those of drained, the versioned publications of the tool that
// closed lately. A spec that does not compile is left out.
func (l *Live) otherSpecs(listed *Tool, cands []candidate, drained []signals.ToolSpec) []*Tool {
	specs := slices.Clone(drained)
	for _, c := range cands {
		if c.pub != nil && c.version() != nil {
			specs = append(specs, c.spec)
		}
	}
	seen := map[string]bool{canonical(listed.spec): true}
	var out []*Tool
	for _, spec := range specs {
		if seen[canonical(spec)] {
			continue
		}
		seen[canonical(spec)] = true
		if t, err := l.compile(spec); err == nil {
			out = append(out, t)
		}
	}
	return out
}

// VersionMetadataKey is the key of a Worker Deployment version's metadata
// under which its workers name the tools they serve on taskQueue
// (RecordVersionTools): `temporal worker deployment describe-version`
// shows them. The catalog does not read it.
func VersionMetadataKey(taskQueue string) string { return "openwop.tools/" + taskQueue }

// RecordVersionTools records the names of the tools pub serves on its
// task queue in the metadata of pub's Worker Deployment version, under
// VersionMetadataKey. It fails while Temporal does not know the version
// (until a worker of it has polled), and for an unversioned pub.
func RecordVersionTools(ctx context.Context, c client.Client, pub signals.Publication) error {
	v := pub.Version
	if v == nil {
		return errors.New("record the tools of a version: the publication has no version")
	}
	names := make([]string, len(pub.Tools))
	for i, t := range pub.Tools {
		names[i] = t.Name
	}
	sort.Strings(names)
	_, err := c.WorkerDeploymentClient().GetHandle(v.DeploymentName).UpdateVersionMetadata(ctx, client.WorkerDeploymentUpdateVersionMetadataOptions{
		Version:        worker.WorkerDeploymentVersion{DeploymentName: v.DeploymentName, BuildID: v.BuildID},
		MetadataUpdate: client.WorkerDeploymentMetadataUpdate{UpsertEntries: map[string]any{VersionMetadataKey(pub.TaskQueue): names}},
	})
	if err != nil {
		return fmt.Errorf("record the tools of version %s: %w", v, err)
	}
	return nil
}

// rollout reports whether two live publications may give one tool
// different specs: two versions of one Worker Deployment (Temporal starts
// new runs on one of them, the current one), or an unversioned worker and
// a versioned one on the same task queue (new runs go to the versioned one
// once its deployment has a current version, to the unversioned one
// before). Two unversioned workers, two workers of one version, or
// workers of two deployments must agree.
func rollout(a, b signals.Publication) bool {
	switch va, vb := a.Version, b.Version; {
	case va == nil && vb == nil:
		return false
	case va == nil || vb == nil:
		return a.TaskQueue == b.TaskQueue
	default:
		return va.DeploymentName == vb.DeploymentName && va.BuildID != vb.BuildID
	}
}
