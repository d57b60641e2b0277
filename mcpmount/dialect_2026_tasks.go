package mcpmount

import (
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// The Tasks extension's shapes of runs (io.modelcontextprotocol/tasks,
// revision 2026-07-28): the Task, the CreateTaskResult of a tools/call, the
// DetailedTask of tasks/get and of notifications/tasks, the acks of
// tasks/update and tasks/cancel. 2026-07-28 requests get them, and so do
// session-era requests that declared the extension.

// taskStatus maps a run status onto a task status. An interrupt-waiting run
// with nothing the client can answer reads working.
func taskStatus(snap signals.Snapshot, requests map[string]core.InputRequest) string {
	switch snap.Status {
	case signals.StatusCompleted:
		return taskCompleted
	case signals.StatusFailed:
		if snap.Error != nil && snap.Error.RPCCode != 0 {
			return taskFailed
		}
		return taskCompleted
	case signals.StatusCancelled:
		return taskCancelled
	case signals.StatusWaitingApproval, signals.StatusWaitingInput:
		if len(requests) > 0 {
			return taskInputRequired
		}
	}
	return taskWorking
}

func (p projector) task(snap signals.Snapshot, status string) task {
	return task{
		TaskID:         runid.Project(snap.RunID),
		Status:         status,
		StatusMessage:  snap.StatusMessage,
		CreatedAt:      timestamp(snap.CreatedAt),
		LastUpdatedAt:  timestamp(snap.UpdatedAt),
		TTLMs:          nil,
		PollIntervalMs: p.pollInterval(status),
	}
}

// createTask builds the CreateTaskResult for a freshly started run.
func (p projector) createTask(snap signals.Snapshot) *createTaskResult {
	status := taskStatus(snap, core.InputRequests(snap))
	return &createTaskResult{ResultType: resultTask, task: p.task(snap, status)}
}

// detailedTask builds the tasks/get result.
func (p projector) detailedTask(snap signals.Snapshot) *detailedTaskResult {
	reqs := core.InputRequests(snap)
	status := taskStatus(snap, reqs)
	res := &detailedTaskResult{ResultType: resultComplete, task: p.task(snap, status)}
	switch status {
	case taskInputRequired:
		res.InputRequests = reqs
	case taskCompleted:
		// The inlined CallToolResult is labelled like a direct answer: the
		// Tasks extension's clients validate it as a complete result.
		res.Result = completeResult(core.RunResult(snap), true)
	case taskFailed:
		res.Error = &taskError{Code: snap.Error.RPCCode, Message: snap.Error.Message}
	}
	return res
}

// gotTask encodes the answer to tasks/get: the run read, as a DetailedTask.
func (m *Mount) gotTask(snap signals.Snapshot, err error) (*detailedTaskResult, error) {
	if err != nil {
		return nil, err
	}
	return m.proj.detailedTask(snap), nil
}

// ack encodes the answer to tasks/update and tasks/cancel: an empty
// complete result once the operation succeeded.
func ack(err error) (*ackResult, error) {
	if err != nil {
		return nil, err
	}
	return &ackResult{ResultType: resultComplete}, nil
}
