package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// The Tasks extension's shapes of runs (io.modelcontextprotocol/tasks,
// revision 2026-07-28): the Task, the CreateTaskResult of a tools/call, the
// DetailedTask of tasks/get and of notifications/tasks, the acks of
// tasks/update and tasks/cancel. 2026-07-28 requests get them, and so do
// session-dialect requests that declared the extension.

func (p Projector) task(snap signals.Snapshot, status string) Task {
	return Task{
		TaskID:         runid.Project(snap.RunID),
		Status:         status,
		StatusMessage:  snap.CurrentMessage(time.Now()),
		CreatedAt:      Timestamp(snap.CreatedAt),
		LastUpdatedAt:  Timestamp(snap.UpdatedAt),
		TTLMs:          nil,
		PollIntervalMs: p.PollInterval(snap, status),
	}
}

// CreateTask builds the CreateTaskResult for a freshly started run.
func (p Projector) CreateTask(snap signals.Snapshot) *CreateTaskResult {
	status := core.TaskStatus(snap, core.InputRequests(snap))
	return &CreateTaskResult{ResultType: ResultTask, Task: p.task(snap, status)}
}

// DetailedTask builds the tasks/get result as caller reads it (its input
// requests say whether caller may answer them).
func (p Projector) DetailedTask(snap signals.Snapshot, caller signals.Subject) *DetailedTaskResult {
	reqs := core.InputRequestsFor(snap, caller)
	status := core.TaskStatus(snap, reqs)
	res := &DetailedTaskResult{ResultType: ResultComplete, Task: p.task(snap, status)}
	switch status {
	case core.TaskInputRequired:
		res.InputRequests = reqs
	case core.TaskCompleted:
		// The inlined CallToolResult is labelled like a direct answer: the
		// Tasks extension's clients validate it as a complete result.
		res.Result = CompleteResult(core.RunResult(snap, p.ResultLimit), true)
	case core.TaskFailed:
		res.Error = &TaskError{Code: snap.Error.RPCCode, Message: snap.Error.Message}
	}
	return res
}

// GotTask encodes the answer to tasks/get: the run caller read, as a
// DetailedTask.
func (p Projector) GotTask(snap signals.Snapshot, caller signals.Subject, err error) (*DetailedTaskResult, error) {
	if err != nil {
		return nil, err
	}
	return p.DetailedTask(snap, caller), nil
}

// Ack encodes the answer to tasks/update and tasks/cancel: an empty
// complete result once the operation succeeded.
func Ack(err error) (*AckResult, error) {
	if err != nil {
		return nil, err
	}
	return &AckResult{ResultType: ResultComplete}, nil
}

// AnswerCall encodes the core's answer to a tools/call in the shapes of
// 2026-07-28 and its Tasks extension; a session-dialect request that declared
// the extension gets them too, without the resultType of a tool result
// (labelled false). A created task is a CreateTaskResult, or the run's
// tool result when the run ended already (and did not fail with a JSON-RPC
// error); a tool that runs only as a task refuses a caller that cannot take
// one for want of the extension.
func (p Projector) AnswerCall(res mcp.Result, err error, labelled bool) (mcp.Result, error) {
	if refusal := (*core.TaskRefusal)(nil); errors.As(err, &refusal) && !refusal.Forbidden {
		return nil, core.TasksExtensionRequired(fmt.Sprintf("tool %q runs only as a task; it", refusal.Tool))
	}
	switch r := res.(type) {
	case *core.ToolResult:
		return CompleteResult(r, labelled), err
	case *core.InputRequired:
		r.ResultType = ResultInputRequired
	case *core.TaskCreated:
		if r.Snap.Status.Terminal() && !core.RPCFailure(r.Snap) {
			return CompleteResult(core.RunResult(r.Snap, p.ResultLimit), labelled), nil
		}
		return p.CreateTask(r.Snap), nil
	}
	return res, err
}

// CompleteResult labels a tool result complete, as every 2026-07-28 result
// is (labelled).
func CompleteResult(r *core.ToolResult, labelled bool) *core.ToolResult {
	if labelled {
		r.ResultType = ResultComplete
	}
	return r
}
