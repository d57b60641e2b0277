package operator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// runList collects the repeated -run flag.
type runList []string

func (r *runList) String() string { return strings.Join(*r, ",") }

func (r *runList) Set(v string) error {
	*r = append(*r, v)
	return nil
}

func moveRunsCommand() command {
	return command{
		name: "move-runs", args: "-deployment NAME -build-id ID [-run ID]... [-dry-run]",
		summary: "Moves the open runs pinned to a build (all of them, or those named by -run) to the deployment's current\n" +
			"version, for a build whose workers cannot come back. Each run is checked first against the current\n" +
			"version's spec: its tool must be one that version's workers publish, on the run's task queue, and the\n" +
			"run's arguments and pre-run inputs must be valid against that spec; a run that fails the check stays\n" +
			"where it is, named with the reason, and the exit status is 1. A moved run is pinned to the current\n" +
			"version (a versioning override): its next workflow task replays its whole history on that build's code,\n" +
			"so that code must replay it (docs/upgrades.md: workflowstest.ReplayOpen checks it beforehand).",
		flags: func(fs *flag.FlagSet) func(context.Context, client.Client, io.Writer) error {
			var o moveOptions
			fs.StringVar(&o.deployment, "deployment", "", required+"the Worker Deployment")
			fs.StringVar(&o.build, "build-id", "", required+"the build whose pinned runs move")
			fs.Var(&o.runs, "run", "a run to move (its task id, REST run id or workflow id); repeat for more; default: every open run pinned to the build")
			fs.BoolVar(&o.dryRun, "dry-run", false, "check the runs and say what would move, moving none")
			return func(ctx context.Context, c client.Client, out io.Writer) error { return moveRuns(ctx, c, o, out) }
		},
	}
}

// moveOptions are the flags of move-runs.
type moveOptions struct {
	deployment, build string
	runs              runList
	dryRun            bool
}

// moveRuns moves the runs o names to the deployment's current version,
// writing one line per run to out.
func moveRuns(ctx context.Context, c client.Client, o moveOptions, out io.Writer) error {
	from := signals.DeploymentVersion{DeploymentName: o.deployment, BuildID: o.build}
	d, err := c.WorkerDeploymentClient().GetHandle(o.deployment).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return fmt.Errorf("describe worker deployment %q: %w", o.deployment, err)
	}
	cur := d.Info.RoutingConfig.CurrentVersion
	switch {
	case cur == nil || cur.BuildID == "":
		return fmt.Errorf("worker deployment %q has no current version to move runs to: make one current first (versions set-current)", o.deployment)
	case cur.BuildID == o.build:
		return fmt.Errorf("build %q is the current version of worker deployment %q: its runs have nowhere else to go; start its workers", o.build, o.deployment)
	}
	to := signals.DeploymentVersion{DeploymentName: o.deployment, BuildID: cur.BuildID}
	var ids []string
	for _, r := range o.runs {
		// A task id (the wire form of a run id) or a workflow id.
		if id, err := runid.Parse(r); err == nil {
			r = id
		}
		ids = append(ids, r)
	}
	if len(ids) == 0 {
		if ids, err = pinnedRuns(ctx, c, from); err != nil {
			return err
		}
	}
	pubs, err := catalog.Publications(ctx, c)
	if err != nil {
		return err
	}
	verb := "moved"
	if o.dryRun {
		verb = "would move"
	}
	refused := 0
	for _, id := range ids {
		tool, err := moveRun(ctx, c, id, from, to, pubs, o.dryRun)
		if err != nil {
			refused++
			fmt.Fprintf(out, "refused %s: %v\n", id, err)
			continue
		}
		fmt.Fprintf(out, "%s %s (tool %s) from build %s to build %s\n", verb, id, tool, from.BuildID, to.BuildID)
	}
	if refused > 0 {
		return fmt.Errorf("%d of %d runs pinned to build %q refused (above); they wait for its workers", refused, len(ids), o.build)
	}
	if len(ids) == 0 {
		fmt.Fprintf(out, "no open run is pinned to build %s of worker deployment %s\n", o.build, o.deployment)
	}
	return nil
}

// pinnedRuns lists the ids of the open runs pinned to v.
func pinnedRuns(ctx context.Context, c client.Client, v signals.DeploymentVersion) ([]string, error) {
	var ids []string
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: pinnedQuery(v.DeploymentName, v.BuildID), NextPageToken: token, PageSize: 1000,
		})
		if err != nil {
			return nil, fmt.Errorf("list the runs pinned to build %q: %w", v.BuildID, err)
		}
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return ids, nil
		}
	}
}

// moveRun checks the run id, pinned to from, against to's spec of its
// tool (pubs are the running publications) and, unless dryRun, pins it to
// to. It returns the run's tool.
func moveRun(ctx context.Context, c client.Client, id string, from, to signals.DeploymentVersion, pubs []signals.Publication, dryRun bool) (string, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return "", fmt.Errorf("describe: %w", err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return "", fmt.Errorf("the run is closed (%s)", info.GetStatus())
	}
	if v, ok := pinnedTo(info); !ok || v != from {
		return "", fmt.Errorf("the run is not pinned to build %q of worker deployment %q", from.BuildID, from.DeploymentName)
	}
	in, err := readInput(ctx, c, info)
	if err != nil {
		return "", err
	}
	spec, err := specOf(pubs, to, info.GetTaskQueue(), in.tool)
	if err == nil {
		err = checkMove(spec, info.GetType().GetName(), in)
	}
	if err != nil || dryRun {
		return in.tool, err
	}
	_, err = c.UpdateWorkflowExecutionOptions(ctx, client.UpdateWorkflowExecutionOptionsRequest{
		WorkflowId: id, RunId: info.GetExecution().GetRunId(),
		WorkflowExecutionOptionsChanges: client.WorkflowExecutionOptionsChanges{
			VersioningOverride: &client.VersioningOverrideChange{Value: &client.PinnedVersioningOverride{
				Version: worker.WorkerDeploymentVersion{DeploymentName: to.DeploymentName, BuildID: to.BuildID},
			}},
		},
	})
	if err != nil {
		return in.tool, fmt.Errorf("set its versioning override: %w", err)
	}
	return in.tool, nil
}

// pinnedTo is the version the run info describes is pinned to, by an
// override or by its versioning behaviour.
func pinnedTo(info *workflowpb.WorkflowExecutionInfo) (signals.DeploymentVersion, bool) {
	vi := info.GetVersioningInfo()
	v := vi.GetDeploymentVersion()
	switch o := vi.GetVersioningOverride(); {
	case o.GetPinned() != nil:
		v = o.GetPinned().GetVersion()
	case o.GetAutoUpgrade() || vi.GetBehavior() != enumspb.VERSIONING_BEHAVIOR_PINNED:
		return signals.DeploymentVersion{}, false
	}
	return signals.DeploymentVersion{DeploymentName: v.GetDeploymentName(), BuildID: v.GetBuildId()}, v.GetBuildId() != ""
}

// runInput is what a run was started with.
type runInput struct {
	// tool is the run's tool.
	tool string
	// plain reports a run of a signals.ContractPlain tool.
	plain bool
	// arguments are its tool arguments.
	arguments json.RawMessage
	// preRunInputs are the answers to its tool's pre-run inputs.
	preRunInputs map[string]json.RawMessage
}

// readInput reads the run's tool (its OpenWOPTool search attribute),
// contract (its memo) and input (its first event).
func readInput(ctx context.Context, c client.Client, info *workflowpb.WorkflowExecutionInfo) (runInput, error) {
	dc := converter.GetDefaultDataConverter()
	var in runInput
	if p := info.GetSearchAttributes().GetIndexedFields()[signals.SearchAttrTool]; p != nil {
		_ = dc.FromPayload(p, &in.tool)
	}
	var contract signals.Contract
	if p := info.GetMemo().GetFields()[signals.MemoContract]; p != nil {
		_ = dc.FromPayload(p, &contract)
	}
	in.plain = contract == signals.ContractPlain
	it := c.GetWorkflowHistory(ctx, info.GetExecution().GetWorkflowId(), info.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return in, errors.New("its history is empty")
	}
	first, err := it.Next()
	if err != nil {
		return in, fmt.Errorf("read its first event: %w", err)
	}
	payloads := first.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(payloads) == 0 {
		return in, errors.New("it was started without an input")
	}
	return in, decodeInput(dc, payloads[0], &in)
}

// decodeInput decodes the run's input p into in: the arguments object of
// a plain run, a signals.StartRequest otherwise.
func decodeInput(dc converter.DataConverter, p *commonpb.Payload, in *runInput) error {
	if in.plain {
		if err := dc.FromPayload(p, &in.arguments); err != nil {
			return fmt.Errorf("decode its arguments: %w", err)
		}
		return nil
	}
	var req signals.StartRequest
	if err := dc.FromPayload(p, &req); err != nil {
		return fmt.Errorf("decode its start request: %w", err)
	}
	in.tool = cmp.Or(req.Tool, in.tool)
	in.arguments, in.preRunInputs = req.Arguments, req.PreRunInputs
	if in.tool == "" {
		return errors.New("it names no tool: not a run of this adapter")
	}
	return nil
}

// specOf is the spec of tool that the running publications of version v
// on queue publish, or an error saying that v does not serve it there.
func specOf(pubs []signals.Publication, v signals.DeploymentVersion, queue, tool string) (signals.ToolSpec, error) {
	published := false
	for _, p := range pubs {
		if p.Version == nil || *p.Version != v || p.TaskQueue != queue {
			continue
		}
		published = true
		for _, s := range p.Tools {
			if s.Name == tool {
				return s, nil
			}
		}
	}
	if !published {
		return signals.ToolSpec{}, fmt.Errorf("no running worker of build %q publishes tools on task queue %q: start one first", v.BuildID, queue)
	}
	return signals.ToolSpec{}, fmt.Errorf("build %q does not serve tool %q on task queue %q", v.BuildID, tool, queue)
}

// checkMove checks that a run of workflow type wfType with input in may
// continue as a run of spec: the same workflow type and contract, its
// arguments and pre-run inputs valid against spec's schemas.
func checkMove(spec signals.ToolSpec, wfType string, in runInput) error {
	if want := cmp.Or(spec.WorkflowType, spec.Name); want != wfType {
		return fmt.Errorf("the new build's tool %q runs workflow type %q, the run is a %q", spec.Name, want, wfType)
	}
	if spec.Plain() != in.plain {
		return fmt.Errorf("the new build's tool %q follows contract %q, which the run does not", spec.Name, cmp.Or(spec.Contract, signals.ContractOpenWOP))
	}
	tool, err := catalog.Compile(spec)
	if err != nil {
		return fmt.Errorf("the new build's spec of tool %q does not compile: %w", spec.Name, err)
	}
	if _, err := tool.ValidateArguments(in.arguments); err != nil {
		return fmt.Errorf("its arguments do not fit the new build's input schema: %s", catalog.Problem(err))
	}
	for key, content := range in.preRunInputs {
		if _, err := tool.ValidateInput(key, content); err != nil {
			return fmt.Errorf("its pre-run inputs do not fit the new build's spec: %s", catalog.Problem(err))
		}
	}
	return nil
}
