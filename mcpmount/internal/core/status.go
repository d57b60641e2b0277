package core

import "github.com/openwop/temporal-mcp/signals"

// Task statuses of the Tasks extension, the status vocabulary of every
// answer about a run (tasks and the companion tools alike).
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// TaskStatus maps a run status onto a task status. An interrupt-waiting run
// with nothing the client can answer reads working.
func TaskStatus(snap signals.Snapshot, requests map[string]ElicitRequest) string {
	switch snap.Status {
	case signals.StatusCompleted:
		return TaskCompleted
	case signals.StatusFailed:
		if snap.Error != nil && snap.Error.RPCCode != 0 {
			return TaskFailed
		}
		return TaskCompleted
	case signals.StatusCancelled:
		return TaskCancelled
	case signals.StatusWaitingApproval, signals.StatusWaitingInput:
		if len(requests) > 0 {
			return TaskInputRequired
		}
	}
	return TaskWorking
}
