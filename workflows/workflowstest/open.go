package workflowstest

import (
	"context"
	"fmt"
	"sort"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/workflows"
)

// OpenRun is a run in flight whose history ReplayOpen replayed.
type OpenRun struct {
	// WorkflowID and RunID name the run.
	WorkflowID, RunID string
	// Tool is the run's tool (its workflow type).
	Tool string
	// Version is the Worker Deployment version the run is on
	// ("<deployment>.<build id>"), empty for an unversioned run.
	Version string
	// Pinned is set when the run stays on Version until it ends: new code
	// of another version never replays it, whatever Err says.
	Pinned bool
	// Err is the replay's error: non-nil when the code would fail the run
	// at its next workflow task (a nondeterminism error names TMPRL1100).
	Err error
}

// Breaks reports whether the new code would break the run: its replay
// failed and it is not pinned to another version than version (the
// version the new code is deployed as, "" for an unversioned worker).
func (r OpenRun) Breaks(version string) bool {
	return r.Err != nil && (!r.Pinned || r.Version == version)
}

// ReplayOpen replays, with the tools of reg, the history so far of every
// open run of those tools that query selects (a visibility query, e.g.
// "TaskQueue = 'refunds'"; empty: all of them), and returns the runs in
// the order of their workflow ids: the runs in flight a change would
// break are those whose Breaks holds. Run it before a deploy, against the
// namespace the tools serve, with the registry of the new build; a run
// whose Err is set while Pinned finishes on its own version and needs
// that version's workers until it ends.
func ReplayOpen(ctx context.Context, c client.Client, reg *workflows.Registry, query string) ([]OpenRun, error) {
	var types []string
	for _, spec := range reg.Specs() {
		types = append(types, fmt.Sprintf("'%s'", spec.Name))
	}
	q := fmt.Sprintf("ExecutionStatus = 'Running' AND WorkflowType IN (%s)", strings.Join(types, ", "))
	if query != "" {
		q += " AND (" + query + ")"
	}
	var out []OpenRun
	req := &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: 1000}
	for {
		resp, err := c.ListWorkflow(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("list the open runs: %w", err)
		}
		for _, info := range resp.GetExecutions() {
			run, err := replayOpen(ctx, c, reg, info)
			if err != nil {
				return nil, err
			}
			out = append(out, run)
		}
		if req.NextPageToken = resp.GetNextPageToken(); len(req.NextPageToken) == 0 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkflowID < out[j].WorkflowID })
	return out, nil
}

// replayOpen reads the history of one open run and replays it.
func replayOpen(ctx context.Context, c client.Client, reg *workflows.Registry, info *workflowpb.WorkflowExecutionInfo) (OpenRun, error) {
	ex := info.GetExecution()
	run := OpenRun{WorkflowID: ex.GetWorkflowId(), RunID: ex.GetRunId(), Tool: info.GetType().GetName()}
	// A listing may leave the versioning info out; a description has it.
	desc, err := c.DescribeWorkflowExecution(ctx, run.WorkflowID, run.RunID)
	if err != nil {
		return OpenRun{}, fmt.Errorf("describe run %s: %w", run.WorkflowID, err)
	}
	if vi := desc.GetWorkflowExecutionInfo().GetVersioningInfo(); vi != nil {
		if v := vi.GetDeploymentVersion(); v.GetBuildId() != "" {
			run.Version = v.GetDeploymentName() + "." + v.GetBuildId()
		}
		run.Pinned = vi.GetBehavior() == enumspb.VERSIONING_BEHAVIOR_PINNED
	}
	hist := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, run.WorkflowID, run.RunID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return OpenRun{}, fmt.Errorf("history of run %s: %w", run.WorkflowID, err)
		}
		hist.Events = append(hist.Events, ev)
	}
	run.Err = replayHistory(reg, hist, run.WorkflowID, run.RunID)
	return run, nil
}
