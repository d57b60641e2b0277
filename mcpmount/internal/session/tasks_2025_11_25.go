package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// The 2025-11-25 task methods: session-dialect clients (protocol 2025-11-25)
// opt in per call with params.task on tools/call and follow the task with
// tasks/get, tasks/result, tasks/list and tasks/cancel. A task is the same
// run as a Tasks-extension task, served by the same core operations
// (core.Tasks) with the same rules and tenant isolation; only the wire
// shapes differ (nested task on create, ttl and pollInterval, a failed
// status for isError results, tasks/result blocking for the payload), and
// this file only decodes and encodes them.

// dialectVersion is the protocol revision that defines the dialect.
const dialectVersion = "2025-11-25"

// metaRelatedTask is the _meta key tying a message to its task.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// taskRequested reports whether a session-dialect request's params hold
// the dialect's task field (the table's taskField of its method).
func taskRequested(method string, params map[string]json.RawMessage) bool {
	field := table[method].taskField
	return field != nil && field(params)
}

// wantsTask reports whether the params of a tools/call hold a params.task
// object.
func wantsTask(params map[string]json.RawMessage) bool {
	var t map[string]json.RawMessage
	return json.Unmarshal(params["task"], &t) == nil && t != nil
}

// declaresTasks reports whether the params of an initialize hold a
// capabilities.tasks object.
func declaresTasks(params map[string]json.RawMessage) bool {
	var caps, t map[string]json.RawMessage
	return json.Unmarshal(params["capabilities"], &caps) == nil && json.Unmarshal(caps["tasks"], &t) == nil && t != nil
}

// dialectCapability is the capabilities.tasks object of the 2025-11-25
// initialize result: tasks can be listed and cancelled, and tools/call can
// be task-augmented.
func dialectCapability() map[string]any {
	return map[string]any{
		"list":     map[string]any{},
		"cancel":   map[string]any{},
		"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
	}
}

// sessionTask is the dialect's Task. TTL has no omitempty: null means
// unlimited (runs live as long as Temporal retains them).
type sessionTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

// createTaskResult answers a tools/call with params.task.
type createTaskResult struct {
	mcp.ResultBase
	Task sessionTask `json:"task"`
}

// taskResult answers tasks/get and tasks/cancel: a flat Task.
type taskResult struct {
	mcp.ResultBase
	sessionTask
}

// listTasksResult answers tasks/list.
type listTasksResult struct {
	mcp.ResultBase
	Tasks      []sessionTask `json:"tasks"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// listTasksParams are the params of tasks/list.
type listTasksParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// rawResult is a result the mount rewrote as a JSON object (the SDK's
// result types cannot carry the dialect's fields).
type rawResult struct {
	mcp.ResultBase
	fields map[string]any
}

// MarshalJSON emits the rewritten object.
func (r *rawResult) MarshalJSON() ([]byte, error) { return json.Marshal(r.fields) }

// sessionStatus maps a run onto a dialect task status. Unlike the Tasks
// extension, a tool error (isError) is failed. A run whose cancellation was
// requested reads cancelled at once: tasks/cancel answers cancelled, and the
// run never leaves that state for another.
func sessionStatus(snap signals.Snapshot) string {
	switch snap.Status {
	case signals.StatusCompleted:
		return core.TaskCompleted
	case signals.StatusFailed:
		return core.TaskFailed
	case signals.StatusCancelled, signals.StatusCancelling:
		return core.TaskCancelled
	case signals.StatusWaitingApproval, signals.StatusWaitingInput:
		// A visibility summary (LastSequence -1) lists no interrupts; its
		// status says that the run waits for an answer.
		if core.SuspendsForInput(snap) || snap.LastSequence < 0 && len(snap.Interrupts) == 0 {
			return core.TaskInputRequired
		}
	}
	return core.TaskWorking
}

// sessionTaskOf is the 2025-11-25 Task of the run snap.
func sessionTaskOf(p wire.Projector, snap signals.Snapshot) sessionTask {
	status := sessionStatus(snap)
	return sessionTask{
		TaskID:        runid.Project(snap.RunID),
		Status:        status,
		StatusMessage: snap.CurrentMessage(time.Now()),
		CreatedAt:     wire.Timestamp(snap.CreatedAt),
		LastUpdatedAt: wire.Timestamp(snap.UpdatedAt),
		TTL:           nil,
		PollInterval:  p.PollInterval(snap, status),
	}
}

// sessionRequest reports whether req is a session-dialect request (its _meta
// names no protocol version), which the 2025-11-25 task methods serve.
func sessionRequest(req mcp.Request) bool {
	switch p := req.GetParams().(type) {
	case *wire.TaskParams:
		return p == nil || !core.ModernMeta(p.Meta)
	case *listTasksParams:
		return p == nil || !core.ModernMeta(p.Meta)
	}
	return false
}

// taskIDParam is the params.taskId of a tasks/* request (nil without
// one).
func taskIDParam(req mcp.Request) json.RawMessage {
	if p, _ := req.GetParams().(*wire.TaskParams); p != nil {
		return p.TaskID
	}
	return nil
}

// listSession answers a 2025-11-25 tasks/list: a page of the caller's
// runs (core.Tasks.List), as tasks.
func (t *taskMethods) listSession(ctx context.Context, req mcp.Request, _ json.RawMessage) (mcp.Result, error) {
	var cursor string
	if p, _ := req.GetParams().(*listTasksParams); p != nil {
		cursor = p.Cursor
	}
	snaps, next, err := t.tasks.List(ctx, cursor)
	if err != nil {
		return nil, err
	}
	res := &listTasksResult{Tasks: make([]sessionTask, 0, len(snaps)), NextCursor: next}
	for _, snap := range snaps {
		res.Tasks = append(res.Tasks, sessionTaskOf(t.Projector, snap))
	}
	return res, nil
}

// getSession answers a 2025-11-25 tasks/get: the task of the run
// (core.Tasks.Get).
func (t *taskMethods) getSession(ctx context.Context, _ mcp.Request, rawID json.RawMessage) (mcp.Result, error) {
	snap, _, err := t.tasks.Get(ctx, true, rawID)
	if err != nil {
		return nil, err
	}
	return &taskResult{sessionTask: sessionTaskOf(t.Projector, snap)}, nil
}

// cancelSession answers a 2025-11-25 tasks/cancel: the run is cancelled
// (core.Tasks.Cancel) and the task answered, read anew for its other
// fields (its creation time above all), cancelled. A terminal task cannot
// be cancelled (-32602, as the revision says).
func (t *taskMethods) cancelSession(ctx context.Context, _ mcp.Request, rawID json.RawMessage) (mcp.Result, error) {
	snap, err := t.tasks.Cancel(ctx, true, rawID)
	switch {
	case errors.Is(err, core.ErrTerminal):
		return nil, core.InvalidParams(fmt.Sprintf("task %s is already %s; a terminal task cannot be cancelled",
			taskIDOf(rawID), sessionStatus(snap)))
	case err != nil:
		return nil, err
	}
	// The cancellation dropped what the run service held of the run: this
	// read is fresh. It completes even if the client goes away, as the
	// cancellation does.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), core.CancelTimeout)
	defer cancel()
	if read, _, err := t.tasks.Get(rctx, true, rawID); err == nil {
		snap = read
	}
	tk := sessionTaskOf(t.Projector, snap)
	tk.Status = core.TaskCancelled
	return &taskResult{sessionTask: tk}, nil
}

// resultSession answers a 2025-11-25 tasks/result: it waits for the run's
// end (core.Tasks.Result) and answers what the tools/call would have
// answered (its CallToolResult, or its JSON-RPC error), tied to the task
// by the related-task _meta. Until that answer is delivered the request
// owns the run, as a blocking call does: if the client leaves first, the
// run is cancelled. While the run waits for input, a session whose client
// declared elicitation is asked on this request's stream (elicitation/create
// with the related-task _meta); a request that cannot carry server
// requests (a stateless one) waits, and the task reads input_required
// meanwhile.
func (t *taskMethods) resultSession(ctx context.Context, req mcp.Request, rawID json.RawMessage) (mcp.Result, error) {
	side := t.requests.of(req)
	defer t.tracker.Track()()
	defer side.KeepAlive(t.KeepAlive)()
	taskID := taskIDOf(rawID)
	var asker core.Asker
	if ss, _ := req.GetSession().(*mcp.ServerSession); canElicit(ss) {
		asker = taskAsker{ss: ss, taskID: taskID}
	}
	snap, err := t.tasks.Result(ctx, side.requestClaim(), asker, rawID)
	if err != nil {
		return nil, err
	}
	if core.RPCFailure(snap) {
		return nil, &jsonrpc.Error{Code: int64(snap.Error.RPCCode), Message: snap.Error.Message}
	}
	res := core.RunResult(snap, t.Projector.ResultLimit)
	res.Meta = mcp.Meta{metaRelatedTask: map[string]any{"taskId": taskID}}
	return res, nil
}

// canElicit reports whether the session can carry elicitation/create: a
// session-dialect client that declared elicitation in initialize. Stateless
// requests have no declared capabilities.
func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// taskIDOf is the task id rawID names, as the mount writes it ("" when it
// names none: the core refuses such an id before this is used).
func taskIDOf(rawID json.RawMessage) string {
	var w string
	if json.Unmarshal(rawID, &w) != nil {
		return ""
	}
	id, err := runid.Parse(w)
	if err != nil {
		return ""
	}
	return runid.Project(id)
}

// taskAsker asks a 2025-11-25 task's question on its tasks/result stream:
// elicitation/create with the related-task _meta naming the task.
type taskAsker struct {
	ss     *mcp.ServerSession
	taskID string
}

func (a taskAsker) Ask(ctx context.Context, message string, requestedSchema any) (*mcp.ElicitResult, error) {
	raw, _ := requestedSchema.(json.RawMessage)
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, core.Internal() // a JSON-RPC error: asking again would not help
	}
	return a.ss.Elicit(ctx, &mcp.ElicitParams{
		Meta:            mcp.Meta{metaRelatedTask: map[string]any{"taskId": a.taskID}},
		Mode:            "form",
		Message:         message,
		RequestedSchema: schema,
	})
}

// answerCall encodes the core's answer to a session-dialect tools/call:
// a task the call asked for with params.task is the dialect's
// CreateTaskResult, and the refusals of the tool's task support name
// params.task (a tool that forbids tasks, and in 2025-11-25 one that runs
// only as a task); anything else as wire.Projector.AnswerCall encodes it, without
// resultType.
func (t *taskMethods) answerCall(call *core.CallRequest, res mcp.Result, err error) (mcp.Result, error) {
	if refusal := (*core.TaskRefusal)(nil); errors.As(err, &refusal) {
		switch {
		case refusal.Forbidden:
			return nil, &jsonrpc.Error{Code: wire.CodeMethodNotFound,
				Message: fmt.Sprintf("tool %q does not run as a task: call it without params.task", refusal.Tool)}
		case call.MustAskForTask:
			return nil, &jsonrpc.Error{Code: wire.CodeMethodNotFound,
				Message: fmt.Sprintf("tool %q runs only as a task: call it with params.task", refusal.Tool)}
		}
	}
	if created, ok := res.(*core.TaskCreated); ok && call.Task == core.TaskWanted {
		return &createTaskResult{Task: sessionTaskOf(t.Projector, created.Snap)}, nil
	}
	return t.Projector.AnswerCall(res, err, false)
}
