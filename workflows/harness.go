package workflows

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
)

// DefaultActivityOptions returns the activity options set on the context a
// tool function receives:
//
//   - StartToCloseTimeout 10 minutes: an attempt that runs longer is failed
//     and retried (set your own for longer activities);
//   - no HeartbeatTimeout, so an activity that does not heartbeat is never
//     timed out for it (an activity that heartbeats should set one: see the
//     package doc, "Activities: retries, idempotence, heartbeats");
//   - WaitForCancellation, so that a cancelled run waits until its activity
//     has acknowledged the cancellation, and ends only after its work has
//     stopped;
//   - a retry policy of at most 5 attempts, 1 s after the first failure, then
//     2 s, 4 s, 8 s (doubling, at most 30 s apart). An error made with
//     temporal.NewNonRetryableApplicationError is not retried.
//
// A tool sets other options with workflow.WithActivityOptions; start from
// workflow.GetActivityOptions(ctx) to change only some.
func DefaultActivityOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    5,
		},
	}
}

// Error codes the harness assigns.
const (
	// CodeToolError is the code of a failure the tool returned as a plain
	// error (not made with Fail or ProtocolError).
	CodeToolError = "tool_error"
	// CodeInvalidArguments is the code of a run whose arguments do not decode
	// into the tool's input type.
	CodeInvalidArguments = "invalid_arguments"
	// CodeProtocolError is the code of a run ended with ProtocolError.
	CodeProtocolError = "protocol_error"
)

// statusKey is the search attribute the run keeps current.
var statusKey = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrStatus)

// Changes to the commands the harness emits, each guarded with
// workflow.GetVersion so that runs started before it still replay
// (docs/upgrades.md).
const (
	// changePublishState: the run keeps its signals.PublishedState in its
	// memo (signals.MemoState), an upsert at every change of status, open
	// interrupts or cancel reason.
	changePublishState = "openwop-publish-state"
	// versionPublishState is the version of changePublishState that
	// publishes.
	versionPublishState workflow.Version = 1
	// versionOneUpsertPerTask is the version of changePublishState that
	// upserts the status search attribute and the memo once per workflow
	// task, with the values the task ends with, instead of at every
	// change (each upsert is an event and a visibility write).
	versionOneUpsertPerTask workflow.Version = 2
	// versionPublishProgress is the version of changePublishState whose
	// published state carries the run's progress and a status message
	// naming the current step: an upsert also when they change.
	versionPublishProgress workflow.Version = 3

	// changeWithdraw: a question whose ask's context is cancelled, or
	// whose Timeout elapses, while the run goes on is withdrawn (it
	// leaves the open interrupts, and the state is published). Before
	// it, such a question stayed open.
	changeWithdraw = "openwop-withdraw-question"
	// versionWithdraw is the version of changeWithdraw that withdraws.
	versionWithdraw workflow.Version = 1
)

// runKey is the workflow.Context key under which the run state is stored.
type runKey struct{}

// run is the state of one run. It lives in the workflow's memory only; every
// change is made by workflow code (the main coroutine, the signal dispatcher)
// and queries only read it.
type run struct {
	root   workflow.Context // the workflow's own context, for upserts
	logger log.Logger
	snap   signals.Snapshot
	events []signals.Event
	preRun map[string]json.RawMessage

	// Interrupts.
	minted  int                 // interrupt ids minted so far
	keys    map[string]bool     // interrupt keys used so far
	pending map[string]*Pending // open interrupts by id

	// Cancellation.
	cancelTool workflow.CancelFunc // cancels the tool's context
	cancelling bool
	// cancelledAt is the progress the run had when its cancellation
	// began, or last reported since: the step its cancelled status
	// message keeps.
	cancelledAt  *signals.Progress
	cancelReason string
	cancelledBy  signals.Subject
	terminal     bool

	// Published state (see publish).
	publishState bool   // the run keeps signals.MemoState current
	published    string // key of the state last published
	details      string // the current details last set
	// onePerTask defers the upserts to the end of the workflow task's
	// work (versionOneUpsertPerTask): dirty marks a change not upserted
	// yet, upserted is the status the search attribute holds.
	onePerTask bool
	dirty      bool
	upserted   signals.Status
	// publishProgress: the published state carries the progress
	// (versionPublishProgress).
	publishProgress bool
}

// start runs a tool: the whole life of one run, from run.started to its
// terminal event. call decodes the arguments into the tool's input, runs
// the tool and returns its output.
func start(ctx workflow.Context, req signals.StartRequest, call func(ctx workflow.Context, args json.RawMessage) (any, error)) (signals.RunRecord, error) {
	info := workflow.GetInfo(ctx)
	r := &run{
		root:    ctx,
		preRun:  req.PreRunInputs,
		keys:    map[string]bool{},
		pending: map[string]*Pending{},
		snap: signals.Snapshot{
			RunID:        info.WorkflowExecution.ID,
			Tool:         info.WorkflowType.Name,
			Status:       signals.StatusPending,
			Owner:        req.Owner,
			Transport:    req.Transport,
			CreatedAt:    info.WorkflowStartTime.UTC(),
			UpdatedAt:    workflow.Now(ctx).UTC(),
			LastSequence: -1,
			ResultLimit:  req.ResultLimit,
		},
	}
	if req.Tool != "" {
		r.snap.Tool = req.Tool
	}
	if !req.CreatedAt.IsZero() {
		// The creation time the server reports everywhere.
		r.snap.CreatedAt = req.CreatedAt.UTC()
	}
	if r.snap.CreatedAt.IsZero() {
		r.snap.CreatedAt = r.snap.UpdatedAt
	}
	r.snap.StatusMessage = r.snap.Status.Message()
	r.logger = runLogger(ctx, r.snap)

	if err := workflow.SetQueryHandler(ctx, signals.QueryGetRun, func() (signals.Snapshot, error) {
		return r.snap, nil
	}); err != nil {
		return signals.RunRecord{}, fmt.Errorf("set %s query handler: %w", signals.QueryGetRun, err)
	}
	if err := workflow.SetQueryHandler(ctx, signals.QueryEvents, func(q signals.EventsQuery) (signals.EventPage, error) {
		return r.page(q), nil
	}); err != nil {
		return signals.RunRecord{}, fmt.Errorf("set %s query handler: %w", signals.QueryEvents, err)
	}

	version := workflow.GetVersion(ctx, changePublishState, workflow.DefaultVersion, versionPublishProgress)
	r.publishState = version >= versionPublishState
	r.publishProgress = version >= versionPublishProgress
	if r.onePerTask = version >= versionOneUpsertPerTask; r.onePerTask {
		r.upserted = r.snap.Status // set by the start call
		r.flushAtTaskEnd(ctx)
	}

	r.emit(signals.EventRunStarted, "", map[string]any{
		"owner":      req.Owner,
		"transport":  req.Transport,
		"workflowId": r.snap.Tool,
	})
	r.setStatus(signals.StatusRunning)

	toolCtx, cancelTool := workflow.WithCancel(ctx)
	r.cancelTool = cancelTool
	toolCtx = workflow.WithValue(toolCtx, runKey{}, r)
	toolCtx = workflow.WithActivityOptions(toolCtx, DefaultActivityOptions())

	r.dispatch(ctx)
	r.followProgress(ctx)
	// Mark the run cancelling as soon as the workflow is asked to cancel,
	// while its activities are still being cancelled.
	workflow.Go(ctx, func(c workflow.Context) {
		_ = workflow.Await(c, func() bool { return r.terminal })
		if ctx.Err() != nil && !r.terminal {
			r.beginCancel("")
		}
	})

	out, err := call(toolCtx, req.Arguments)

	if ctx.Err() != nil && !r.cancelling {
		r.beginCancel("")
	}
	if r.cancelling {
		if err == nil {
			r.logger.Info("Tool returned a result after cancellation was requested; the run ends cancelled")
		}
		return r.finishCancelled()
	}
	if err != nil {
		return r.finishFailed(err)
	}
	return r.finishCompleted(out)
}

// from returns the run state stored in ctx by the harness.
func from(ctx workflow.Context) (*run, error) {
	r, ok := ctx.Value(runKey{}).(*run)
	if !ok || r == nil {
		return nil, errors.New("workflows: not called inside a tool run (use the context the harness passed to the tool)")
	}
	return r, nil
}

// now is the workflow time in UTC.
func (r *run) now() time.Time { return workflow.Now(r.root).UTC() }

// emit appends one event to the log. After the terminal event nothing is
// appended (RFC 0194).
func (r *run) emit(typ, nodeID string, payload any) {
	if r.terminal {
		r.logger.Warn("Event after the terminal event dropped", "type", typ, "nodeId", nodeID)
		return
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		// Payloads are built by the harness from plain data; this is a bug.
		r.logger.Error("Event payload does not encode", "type", typ, "error", err)
		raw = json.RawMessage(`{}`)
	}
	seq := len(r.events)
	now := r.now()
	r.events = append(r.events, signals.Event{
		EventID:       fmt.Sprintf("%s-e%d", r.snap.RunID, seq),
		RunID:         r.snap.RunID,
		Type:          typ,
		Payload:       raw,
		Timestamp:     now,
		Sequence:      seq,
		SchemaVersion: signals.EventLogSchemaVersion,
		NodeID:        nodeID,
	})
	r.snap.LastSequence = seq
	r.snap.UpdatedAt = now
	if signals.TerminalEvent(typ) {
		r.terminal = true
	}
}

// setStatus changes the run status and keeps the search attribute current.
// Every change of the open interrupts or the cancel reason ends with a
// call, so it also publishes the run's state (publish).
func (r *run) setStatus(s signals.Status) {
	r.snap.UpdatedAt = r.now()
	if r.snap.Status != s {
		r.snap.Status = s
		// A cancelled run's message keeps the step it got to.
		r.snap.StatusMessage = s.MessageAt(r.snap.Progress)
		if s.Terminal() {
			r.snap.Progress = nil
		}
		if !r.onePerTask {
			r.upsertStatus()
		}
	}
	r.publish()
	if r.onePerTask && s.Terminal() {
		// The run ends in this task: nothing runs after it returns.
		r.flush()
	}
}

// upsertStatus sets the status search attribute to the run's status.
func (r *run) upsertStatus() {
	s := r.snap.Status
	if err := workflow.UpsertTypedSearchAttributes(r.root, statusKey.ValueSet(string(s))); err != nil {
		r.logger.Error("Status search attribute not updated", "status", string(s), "error", err)
		return
	}
	r.upserted = s
}

// flushAtTaskEnd starts the coroutine that makes the deferred upserts of a
// onePerTask run. The workflow's dispatcher runs one coroutine at a time,
// each until it blocks, and re-checks this one's condition on its next
// pass: so the changes a coroutine makes before it blocks, and those of
// the coroutines that run in the same pass, become one upsert of each kind
// with the latest values. (A change made after that, in the same workflow
// task, is upserted on a later pass.) It runs on a context that
// cancellation does not reach, so that cancelling the run does not end
// it.
func (r *run) flushAtTaskEnd(ctx workflow.Context) {
	disconnected, _ := workflow.NewDisconnectedContext(ctx)
	workflow.Go(disconnected, func(c workflow.Context) {
		for {
			if err := workflow.Await(c, func() bool { return r.dirty }); err != nil {
				return
			}
			r.flush()
		}
	})
}

// flush makes a onePerTask run's deferred upserts: the status search
// attribute and the published state, each only if it changed.
func (r *run) flush() {
	r.dirty = false
	if r.snap.Status != r.upserted {
		r.upsertStatus()
	}
	r.upsertPublished()
}

// publish makes the run's state readable without a worker when it
// changed: the memo (signals.MemoState, for a describe call) in runs that
// started with changePublishState, and the current details the Temporal
// UI shows (workflow.SetCurrentDetails) in every run. The memo is upserted
// only when the status, the open interrupts or the cancel reason changed,
// so replays emit the same commands.
func (r *run) publish() {
	if d := currentDetails(r.snap); d != r.details {
		workflow.SetCurrentDetails(r.root, d)
		r.details = d
	}
	if !r.publishState {
		return
	}
	if r.onePerTask {
		r.dirty = true
		return
	}
	r.upsertPublished()
}

// upsertPublished upserts the run's published state into its memo when it
// changed since the last upsert.
func (r *run) upsertPublished() {
	st := r.snap.Published()
	if !r.publishProgress {
		// What runs started before versionPublishProgress publish.
		st.Progress, st.StatusMessage = nil, st.Status.Message()
	}
	key := publishedKey(st)
	if key == r.published {
		return
	}
	if err := workflow.UpsertMemo(r.root, map[string]any{signals.MemoState: st}); err != nil {
		r.logger.Error("Published run state not updated", "status", string(st.Status), "error", err)
		return
	}
	r.published = key
}

// publishedKey identifies what a PublishedState says: its status, cancel
// reason and open interrupts (and whether they are listed).
func publishedKey(st signals.PublishedState) string {
	key := fmt.Sprintf("%s|%s|%d|%t", st.Status, st.CancelReason, st.OpenInterrupts, st.Interrupts != nil)
	for _, in := range st.Interrupts {
		key += "|" + in.ID
	}
	if p := st.Progress; p != nil {
		key += fmt.Sprintf("|%q|%d|%d", p.Step, p.Done, p.Total)
	}
	return key
}

// waitingStatus is the status the run has while interrupts are open:
// waiting-approval when an approval is open, else waiting-input when a
// question is open, else waiting-external.
func (r *run) waitingStatus() signals.Status {
	if len(r.snap.Interrupts) == 0 {
		return signals.StatusRunning
	}
	st := signals.StatusWaitingExternal
	for _, i := range r.snap.Interrupts {
		switch i.Kind {
		case signals.KindApproval:
			return signals.StatusWaitingApproval
		case signals.KindExternalEvent:
		default:
			st = signals.StatusWaitingInput
		}
	}
	return st
}

// page answers QueryEvents. LastSequence is the sequence of the last event
// returned or, when none is returned, the last sequence of the log (-1 when
// the log is empty), so a poller can pass it back as AfterSequence.
func (r *run) page(q signals.EventsQuery) signals.EventPage {
	p := signals.EventPage{Events: []signals.Event{}, LastSequence: r.snap.LastSequence}
	start := q.AfterSequence + 1
	if start < 0 {
		start = 0
	}
	for i := start; i < len(r.events); i++ {
		if q.Limit > 0 && len(p.Events) == q.Limit {
			break
		}
		p.Events = append(p.Events, r.events[i])
	}
	if n := len(p.Events); n > 0 {
		p.LastSequence = p.Events[n-1].Sequence
	}
	return p
}

// record is the run's final record.
func (r *run) record() signals.RunRecord {
	events := make([]signals.Event, len(r.events))
	copy(events, r.events)
	return signals.RunRecord{Snapshot: r.snap, Events: events}
}

// beginCancel moves the run to cancelling and cancels the tool's context
// (and so its activities). reason, when set, overrides any reason signalled.
func (r *run) beginCancel(reason string) {
	if r.cancelling || r.terminal {
		return
	}
	r.cancelling = true
	if reason == "" {
		req := r.signalledReason()
		reason, r.cancelledBy = req.Reason, req.CancelledBy
	}
	reason = cmp.Or(reason, signals.ReasonCallerRequested)
	r.cancelReason = reason
	r.snap.CancelReason = reason
	// Readers tell how long the run has been cancelling: its code may
	// never honour the request (what it publishes holds no new command).
	r.snap.CancelRequestedAt = r.now()
	r.cancelledAt = r.snap.Progress
	r.setStatus(signals.StatusCancelling)
	r.cancelTool()
}

// signalledReason drains the cancel-reason signal channel and returns the
// last request with a reason, or the zero request.
func (r *run) signalledReason() signals.CancelRequest {
	ch := workflow.GetSignalChannel(r.root, signals.SignalCancelReason)
	var last signals.CancelRequest
	for {
		var req signals.CancelRequest
		if !ch.ReceiveAsync(&req) {
			return last
		}
		if req.Reason != "" {
			last = req
		}
	}
}

// closeInterrupts drops every open interrupt when the run ends.
func (r *run) closeInterrupts() {
	r.snap.Interrupts = nil
	for id, p := range r.pending {
		p.closed = true
		delete(r.pending, id)
	}
}

func (r *run) finishCancelled() (signals.RunRecord, error) {
	r.closeInterrupts()
	// Its message says how far it got ("the run is cancelled: step copy
	// (11/30)"), though the step itself has returned.
	r.snap.Progress = r.cancelledAt
	r.setStatus(signals.StatusCancelled)
	payload := map[string]any{
		"reason":     r.cancelReason,
		"durationMs": r.durationMs(),
	}
	if !r.cancelledBy.IsZero() {
		payload["cancelledBy"] = r.cancelledBy
	}
	r.emit(signals.EventRunCancelled, "", payload)
	rec := r.record()
	return rec, temporal.NewCanceledError(rec)
}

func (r *run) finishFailed(err error) (signals.RunRecord, error) {
	runErr := classify(err)
	node := r.snap.Tool
	var se *stepError
	var te *ToolError
	switch {
	case errors.As(err, &se):
		node = se.node
	case errors.As(err, &te) && te.NodeID != "":
		node = te.NodeID
	}
	r.closeInterrupts()
	r.snap.Error = &runErr
	r.snap.Result = &signals.ToolResult{
		Content: []signals.Content{{Type: "text", Text: runErr.Message}},
		IsError: true,
	}
	if se == nil || !se.reported {
		r.emit(signals.EventNodeFailed, node, map[string]any{"nodeId": node, "error": runErr})
	}
	r.setStatus(signals.StatusFailed)
	r.emit(signals.EventRunFailed, "", map[string]any{
		"error":        runErr,
		"failedNodeId": node,
		"durationMs":   r.durationMs(),
	})
	rec := r.record()
	return rec, temporal.NewNonRetryableApplicationError(runErr.Message, runErr.Code, nil, rec)
}

func (r *run) finishCompleted(out any) (signals.RunRecord, error) {
	outputs, text, err := encodeOutput(out)
	if err != nil {
		return r.finishFailed(fmt.Errorf("encode tool output: %w", err))
	}
	r.closeInterrupts()
	r.snap.Outputs = outputs
	r.snap.Result = &signals.ToolResult{
		Content:           []signals.Content{{Type: "text", Text: text}},
		StructuredContent: outputs,
	}
	r.setStatus(signals.StatusCompleted)
	r.emit(signals.EventRunCompleted, "", map[string]any{
		"outputs":    outputs,
		"durationMs": r.durationMs(),
	})
	return r.record(), nil
}

func (r *run) durationMs() int64 { return r.now().Sub(r.snap.CreatedAt).Milliseconds() }

// ResultTexter is implemented by a tool output that has its own text for the
// result's text content. Other outputs are shown as is (strings) or as JSON.
type ResultTexter interface {
	ResultText() string
}

// encodeOutput turns a tool output into the run's outputs object and the text
// of its content block.
func encodeOutput(out any) (json.RawMessage, string, error) {
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, "", err
	}
	outputs := raw
	if !isObject(raw) {
		outputs, err = json.Marshal(map[string]json.RawMessage{"result": raw})
		if err != nil {
			return nil, "", err
		}
	}
	var text string
	switch v := out.(type) {
	case ResultTexter:
		text = v.ResultText()
	case string:
		text = v
	default:
		text = string(raw)
	}
	return outputs, text, nil
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}

// classify maps a tool error to the run's error.
func classify(err error) signals.RunError {
	var te *ToolError
	if errors.As(err, &te) {
		return signals.RunError{Code: te.Code, Message: te.Message, RPCCode: te.RPCCode}
	}
	return signals.RunError{Code: CodeToolError, Message: err.Error()}
}
