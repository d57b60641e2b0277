package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// The 2025-11-25 task dialect: session-era clients (protocol 2025-11-25)
// opt in per call with params.task on tools/call and follow the task with
// tasks/get, tasks/result, tasks/list and tasks/cancel. A task is the same
// run as a Tasks-extension task, with the same tenant isolation; only the
// wire shapes differ (nested task on create, ttl and pollInterval, a failed
// status for isError results, tasks/result blocking for the payload).

// dialectVersion is the protocol revision that defines the dialect.
const dialectVersion = "2025-11-25"

// metaRelatedTask is the _meta key tying a message to its task.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// legacyTaskRequested reports whether a session-era request's params hold
// the dialect's task field: a params.task object on tools/call, a
// capabilities.tasks object on initialize.
func legacyTaskRequested(method string, params map[string]json.RawMessage) bool {
	var t map[string]json.RawMessage
	switch method {
	case "tools/call":
		return json.Unmarshal(params["task"], &t) == nil && t != nil
	case "initialize":
		var caps map[string]json.RawMessage
		return json.Unmarshal(params["capabilities"], &caps) == nil && json.Unmarshal(caps["tasks"], &t) == nil && t != nil
	}
	return false
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

// legacyTask is the dialect's Task. TTL has no omitempty: null means
// unlimited (runs live as long as Temporal retains them).
type legacyTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

// legacyCreateTaskResult answers a tools/call with params.task.
type legacyCreateTaskResult struct {
	mcp.ResultBase
	Task legacyTask `json:"task"`
}

// legacyTaskResult answers tasks/get and tasks/cancel: a flat Task.
type legacyTaskResult struct {
	mcp.ResultBase
	legacyTask
}

// listTasksResult answers tasks/list.
type listTasksResult struct {
	mcp.ResultBase
	Tasks      []legacyTask `json:"tasks"`
	NextCursor string       `json:"nextCursor,omitempty"`
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

// legacyStatus maps a run onto a dialect task status. Unlike the Tasks
// extension, a tool error (isError) is failed. A run whose cancellation was
// requested reads cancelled at once: tasks/cancel answers cancelled, and the
// run never leaves that state for another.
func legacyStatus(snap signals.Snapshot) string {
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

func legacyTaskOf(p wire.Projector, snap signals.Snapshot) legacyTask {
	status := legacyStatus(snap)
	return legacyTask{
		TaskID:        runid.Project(snap.RunID),
		Status:        status,
		StatusMessage: snap.CurrentMessage(time.Now()),
		CreatedAt:     wire.Timestamp(snap.CreatedAt),
		LastUpdatedAt: wire.Timestamp(snap.UpdatedAt),
		TTL:           nil,
		PollInterval:  p.PollInterval(snap, status),
	}
}

// legacyRequest reports whether req is a session-era request (its _meta
// names no protocol version), which the dialect serves.
func legacyRequest(req mcp.Request) bool {
	switch p := req.GetParams().(type) {
	case *wire.TaskParams:
		return p == nil || !core.ModernMeta(p.Meta)
	case *listTasksParams:
		return p == nil || !core.ModernMeta(p.Meta)
	}
	return false
}

// dialect serves the dialect's tasks/* methods to a session-era request.
func (m *Dialect) dialect(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
	if method == "tasks/list" {
		p, _ := req.GetParams().(*listTasksParams)
		return m.listTasks(ctx, p)
	}
	caller, id, err := m.legacyTarget(ctx, req)
	if err != nil {
		return nil, err
	}
	switch method {
	case "tasks/get":
		snap, err := m.runs.Get(ctx, caller, id, runs.AllowStale())
		if err != nil {
			return nil, m.Core.LookupErr(ctx, "get run", id, err)
		}
		return &legacyTaskResult{legacyTask: legacyTaskOf(m.Projector, snap)}, nil
	case "tasks/cancel":
		return m.legacyCancel(ctx, caller, id)
	case "tasks/result":
		var claim *ownership.Claim
		if extra := req.GetExtra(); extra != nil {
			claim = m.tracker.Lookup(extra.Header)
		}
		defer m.tracker.Track()()
		ss, _ := req.GetSession().(*mcp.ServerSession)
		return m.taskPayload(ctx, ss, caller, id, claim)
	}
	return nil, &jsonrpc.Error{Code: wire.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q", method)}
}

// legacyTarget decodes the taskId of a dialect request. Every id the
// caller cannot use gets errTaskNotFound, as in the Tasks extension.
func (m *Dialect) legacyTarget(ctx context.Context, req mcp.Request) (signals.Subject, string, error) {
	caller, err := m.Core.Caller(ctx)
	if err != nil {
		return signals.Subject{}, "", err
	}
	p, _ := req.GetParams().(*wire.TaskParams)
	if p == nil {
		return signals.Subject{}, "", core.TaskNotFound()
	}
	var wire string
	if err := json.Unmarshal(p.TaskID, &wire); err != nil {
		return signals.Subject{}, "", core.TaskNotFound()
	}
	id, err := runid.Parse(wire)
	if err != nil {
		return signals.Subject{}, "", core.TaskNotFound()
	}
	return caller, id, nil
}

// legacyCancel answers tasks/cancel: the run is cancelled as cancelRun
// does (reason caller-requested) and the task answered, cancelled. A
// terminal task cannot be cancelled (-32602, as the revision says).
func (m *Dialect) legacyCancel(ctx context.Context, caller signals.Subject, id string) (mcp.Result, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), core.CancelTimeout)
	defer cancel()
	snap, err := m.runs.Cancel(cctx, caller, id, signals.ReasonCallerRequested)
	switch {
	case errors.Is(err, runs.ErrTerminal):
		return nil, core.InvalidParams(fmt.Sprintf("task %s is already %s; a terminal task cannot be cancelled",
			runid.Project(id), legacyStatus(snap)))
	case err != nil:
		return nil, m.Core.LookupErr(ctx, "cancel run", id, err)
	}
	// Cancel answers without reading the run; read it for the Task's
	// other fields (its creation time above all).
	if read, err := m.runs.Get(cctx, caller, id); err == nil {
		snap = read
	}
	t := legacyTaskOf(m.Projector, snap)
	t.Status = core.TaskCancelled
	return &legacyTaskResult{legacyTask: t}, nil
}

// listTasks answers tasks/list: the caller's runs (its tenant's), from
// Temporal visibility, a page at a time with the run service's sealed
// cursors.
func (m *Dialect) listTasks(ctx context.Context, p *listTasksParams) (mcp.Result, error) {
	caller, err := m.Core.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var cursor string
	if p != nil {
		cursor = p.Cursor
	}
	page, err := m.runs.List(ctx, caller, runs.ListRequest{Cursor: cursor})
	if err != nil {
		if errors.Is(err, runs.ErrBadCursor) {
			return nil, core.InvalidParams("invalid cursor: it was not issued by tasks/list for this caller")
		}
		m.Log.Error("list runs", zap.Error(err))
		return nil, core.Internal()
	}
	res := &listTasksResult{Tasks: make([]legacyTask, 0, len(page.Runs)), NextCursor: page.NextCursor}
	for _, snap := range page.Runs {
		res.Tasks = append(res.Tasks, legacyTaskOf(m.Projector, snap))
	}
	return res, nil
}

// taskPayload answers tasks/result: it blocks until the run is terminal and
// answers what the tools/call would have answered (its CallToolResult, or
// its JSON-RPC error), tied to the task by the related-task _meta. Until
// that answer is delivered the request owns the run, as a blocking call
// does: if the client leaves first, the run is cancelled.
//
// While the run waits for input, a session whose client declared
// elicitation is asked on this request's stream (elicitation/create with
// the related-task _meta), and its answer resolves the interrupt through
// the path of tasks/update. A request that cannot carry server requests (a
// stateless one) waits: the task reads input_required meanwhile.
func (m *Dialect) taskPayload(ctx context.Context, ss *mcp.ServerSession, caller signals.Subject, id string, claim *ownership.Claim) (mcp.Result, error) {
	snap, err := m.runs.Get(ctx, caller, id)
	if err != nil {
		return nil, m.Core.LookupErr(ctx, "get run", id, err)
	}
	if !snap.Status.Terminal() {
		claim.Own(caller, id)
	}
	defer sideOf(claim).KeepAlive(m.KeepAlive)()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer claim.AfterGone(cancel)()
	elicit := canElicit(ss)
	asked := map[string]bool{}
	for !snap.Status.Terminal() {
		if elicit {
			if open := unasked(snap, caller, asked); len(open) > 0 {
				if err := m.elicitInputs(wctx, ss, caller, id, open, asked); err != nil {
					return nil, err
				}
			}
		}
		snap, err = m.runs.Await(wctx, caller, id, func(s signals.Snapshot) bool {
			return s.Status.Terminal() || elicit && len(unasked(s, caller, asked)) > 0
		}, runs.PublishedOnly())
		switch {
		case err == nil:
		case ctx.Err() != nil || claimGone(claim):
			// The client left: the claim settles undelivered and cancels
			// the run; nothing more is sent for this request.
			return nil, context.Canceled
		default:
			return nil, m.Core.LookupErr(ctx, "await run", id, err)
		}
	}
	if core.RPCFailure(snap) {
		return nil, &jsonrpc.Error{Code: int64(snap.Error.RPCCode), Message: snap.Error.Message}
	}
	res := core.RunResult(snap, m.Projector.ResultLimit)
	res.Meta = mcp.Meta{metaRelatedTask: map[string]any{"taskId": runid.Project(id)}}
	return res, nil
}

// claimGone reports whether the request that holds c is gone.
func claimGone(c *ownership.Claim) bool {
	select {
	case <-c.Gone():
		return true
	default:
		return false
	}
}

// canElicit reports whether the session can carry elicitation/create: a
// session-era client that declared elicitation in initialize. Stateless
// requests have no declared capabilities.
func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// unasked returns the open interrupts the client may be asked for caller
// (core.Askable: one that asks other approvers is left to them) and was
// not asked yet.
func unasked(snap signals.Snapshot, caller signals.Subject, asked map[string]bool) []signals.Interrupt {
	var out []signals.Interrupt
	for _, it := range snap.Interrupts {
		if core.Askable(it, caller) && !asked[it.ID] {
			out = append(out, it)
		}
	}
	return out
}

// elicitInputs asks the client each open interrupt, one at a time, and
// resolves it with the answer (askOne: an answer that does not fit is
// asked again). An interrupt is asked once per request: one that stays
// open (the client could not answer) is then left to others, and the
// request waits for the run's end.
func (m *Dialect) elicitInputs(ctx context.Context, ss *mcp.ServerSession, caller signals.Subject, id string, open []signals.Interrupt, asked map[string]bool) error {
	sort.SliceStable(open, func(i, j int) bool { return open[i].ID < open[j].ID })
	a := taskAsker{ss: ss, taskID: runid.Project(id)}
	for _, it := range open {
		asked[it.ID] = true
		err := m.Core.AskOne(ctx, a, caller, id, it)
		switch {
		case ctx.Err() != nil:
			return context.Canceled
		case err != nil:
			// The question stays open for another channel.
			m.Core.RunLog(ctx, id, "").Info("elicitation for a task's input failed; the task stays input_required",
				zap.String("interruptId", it.ID), zap.Error(err))
		}
	}
	return nil
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

// answerTaskDialect encodes the core's answer to a session-era tools/call:
// a task the call asked for with params.task is the dialect's
// CreateTaskResult, and the refusals of the tool's task support name
// params.task (a tool that forbids tasks, and in 2025-11-25 one that runs
// only as a task); anything else as answerCall encodes it, without
// resultType.
func (m *Dialect) answerTaskDialect(call *core.CallRequest, res mcp.Result, err error) (mcp.Result, error) {
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
	if t, ok := res.(*core.TaskCreated); ok && call.Task == core.TaskWanted {
		return &legacyCreateTaskResult{Task: legacyTaskOf(m.Projector, t.Snap)}, nil
	}
	return m.Projector.AnswerCall(res, err, false)
}
