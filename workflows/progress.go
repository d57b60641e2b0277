package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
)

// ReportProgress records how far the current Step has got: done of total
// units of its work (total 0 when not known). The run's snapshot then
// carries it (signals.Snapshot.Progress), and its status message names the
// step and the counts, e.g. "the run is running: step generate (2/3)": an
// MCP client sees it in notifications/progress of a blocking call, in
// tasks/get and in notifications/tasks. Outside a Step the progress names
// no step. It fails only when ctx is not the context of a tool run.
//
// An activity reports its progress with activities.ReportProgress, which
// reaches the run as the signal signals.SignalProgress
// (activities.RecordProgress only records heartbeat details, which the run
// does not see).
func ReportProgress(ctx workflow.Context, done, total int64) error {
	r, err := from(ctx)
	if err != nil {
		return err
	}
	r.setProgress(&signals.Progress{Step: currentNode(ctx), Done: done, Total: total})
	return nil
}

// setProgress makes p the run's progress (nil: none) and publishes the
// status message that names it. Nothing changes once the run is
// terminal.
func (r *run) setProgress(p *signals.Progress) {
	if r.terminal || r.snap.Status.Terminal() {
		return
	}
	r.snap.Progress = p
	if r.cancelling && p != nil {
		r.cancelledAt = p
	}
	r.snap.StatusMessage = r.snap.Status.MessageAt(p)
	r.snap.UpdatedAt = r.now()
	r.publish()
}

// followProgress applies the progress the run's activities (or any
// sender) signal with signals.SignalProgress. A Progress without a step
// keeps the current step's name. It runs on a context that cancellation
// does not reach, like the resolution dispatcher.
func (r *run) followProgress(ctx workflow.Context) {
	onSignal(ctx, signals.SignalProgress, "progressDispatcher", func(p signals.Progress) {
		if p.Step == "" && r.snap.Progress != nil {
			p.Step = r.snap.Progress.Step
		}
		r.setProgress(&p)
	})
}

// stepProgress is the progress of a Step that starts: its name, no counts
// yet.
func stepProgress(nodeID string) *signals.Progress { return &signals.Progress{Step: nodeID} }
