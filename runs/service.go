package runs

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/telemetry"
)

// Search attribute keys, typed for the SDK.
var (
	saTenant    = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTenant)
	saTool      = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTool)
	saTransport = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTransport)
	saStatus    = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrStatus)
)

// Service performs run operations on Temporal. It is safe for concurrent use.
type Service struct {
	client client.Client
	log    *zap.Logger
	opts   Options
	dc     converter.DataConverter
	rand   io.Reader
	// known remembers the runs this process started or read lately (see
	// runMemo): reading a plain one skips the getRun query it cannot
	// answer, and cancelling one skips the describe call.
	known *runMemo
	// workers watches whether workers serve the task queues of runs.
	workers *workers
}

// Defaults of Options, also the defaults of the stock server and worker.
const (
	// DefaultTaskQueue is the task queue of the stock tools.
	DefaultTaskQueue = "openwop-tools"
	// DefaultNamespace is the Temporal namespace runs live in.
	DefaultNamespace = "default"
)

// New returns a Service that uses c. Zero Options fields get defaults:
// DefaultTaskQueue, DefaultNamespace, a 5 s start query timeout.
func New(c client.Client, logger *zap.Logger, opts Options) *Service {
	if opts.TaskQueue == "" {
		opts.TaskQueue = DefaultTaskQueue
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.StartQueryTimeout <= 0 {
		opts.StartQueryTimeout = 5 * time.Second
	}
	if opts.QueryPatience == 0 {
		opts.QueryPatience = DefaultQueryPatience
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	return &Service{client: c, log: logger, opts: opts, dc: converter.GetDefaultDataConverter(), rand: rand.Reader,
		known: newRunMemo(runsRemembered), workers: newWorkers(c, logger)}
}

// UnservedQueues returns the task queues that no worker serves now, sorted:
// those whose runs did not answer a getRun query in time and that no
// worker has polled for 5 s (see Options.QueryPatience), and those no
// worker has polled for 90 s. It checks the queues in also and every queue it checked
// or found unserved before (at most 1024). Each outage is logged once at
// WARN, and at INFO when a worker polls again.
func (s *Service) UnservedQueues(ctx context.Context, also ...string) ([]string, error) {
	return s.workers.unservedQueues(ctx, also...)
}

// startTimeout bounds the Temporal calls of Start, which run detached from
// the caller's cancellation so that a started run is never lost half-way.
const startTimeout = 30 * time.Second

// Start mints a runId in the caller's tenant and starts the tool's workflow
// with it as the workflow ID. It returns once the workflow exists, with a
// snapshot that reads pending (running for a plain workflow): an immediate
// Get resolves, because Temporal holds a getRun query until the run's first
// workflow task completed. With Options.WaitFirstTask it returns the answer
// of that first query instead (pending when StartQueryTimeout passed).
//
// With Options.EagerStart the start asks for Temporal's eager workflow
// start.
//
// Start does not stop when ctx is cancelled: once the start request is sent
// the caller must learn the run's id to own it, so the calls to Temporal use
// a context detached from ctx's cancellation. The caller must check that Tool
// names a registered tool.
//
// No run is left behind by a start that fails. The run id exists before the
// start call, so when that call fails (a timeout, an unavailable server, a
// lost connection: the run may have started all the same), Start describes
// the run: if it exists and ctx is not done (its caller can still be
// answered) Start returns it as started; otherwise Start cancels it with
// reason signals.ReasonStartFailed and returns the error. When Temporal
// cannot tell, or the start may still land, a background check goes on
// (bounded; see settleFailedStart) and cancels the run if it appears: a
// caller answered an error never has a run executing.
//
// With Options.Journal the run is recorded before the start call; the
// caller of a Start that succeeded must call Release once its answer was
// delivered (or the run cancelled).
func (s *Service) Start(ctx context.Context, req StartRequest) (signals.Snapshot, error) {
	id, err := runid.New(req.Caller.Tenant, s.rand)
	if err != nil {
		return signals.Snapshot{}, fmt.Errorf("start run: %w", err)
	}
	owner := signals.Owner{Tenant: req.Caller.Tenant, Subject: req.Caller}
	tool := req.Tool
	if tool.TaskQueue == "" {
		tool.TaskQueue = s.opts.TaskQueue
	}
	if tool.Contract == "" {
		tool.Contract = signals.ContractOpenWOP
	}
	args := req.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	var input any = signals.StartRequest{
		Tool:         tool.Name,
		Arguments:    args,
		Owner:        owner,
		Transport:    req.Transport,
		PreRunInputs: req.PreRunInputs,
	}
	status := signals.StatusPending
	if tool.Plain() {
		// The arguments object itself; a workflow that does not follow the
		// run contract never updates the status attribute.
		var obj map[string]any
		if err := json.Unmarshal(args, &obj); err != nil {
			return signals.Snapshot{}, fmt.Errorf("start run of tool %q: arguments: %w", tool.Name, err)
		}
		input, status = obj, signals.StatusRunning
	}
	opts := client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: tool.TaskQueue,
		// With no worker of the task queue on this client, the SDK
		// starts the run as usual.
		EnableEagerStart:                         s.opts.EagerStart,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		// What the Temporal UI shows on the workflow's page.
		StaticSummary: staticSummary(tool.Name, req.Caller, req.Transport),
		StaticDetails: staticDetails(id, tool, req.Caller, req.Transport),
		Memo: map[string]any{
			signals.MemoOwner:     owner,
			signals.MemoTransport: req.Transport,
			signals.MemoContract:  tool.Contract,
		},
		TypedSearchAttributes: temporal.NewSearchAttributes(
			saTenant.ValueSet(req.Caller.Tenant),
			saTool.ValueSet(tool.Name),
			saTransport.ValueSet(req.Transport),
			saStatus.ValueSet(string(status)),
		),
	}
	traceParent := telemetry.TraceParent(ctx)
	if traceParent != "" {
		opts.Memo[signals.MemoTraceParent] = traceParent
	}
	if s.opts.Journal != nil {
		if err := s.opts.Journal.Begin(JournalEntry{RunID: id, Caller: req.Caller, Transport: req.Transport}); err != nil {
			return signals.Snapshot{}, fmt.Errorf("start run of tool %q: %w", tool.Name, err)
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	run, err := s.client.ExecuteWorkflow(sctx, opts, tool.Type(), input)
	if err != nil {
		if serr := s.searchAttributesErr(sctx, err); serr != nil {
			s.Release(id) // refused: nothing started
			return signals.Snapshot{}, fmt.Errorf("start run of tool %q: %w", tool.Name, serr)
		}
		// The start may have happened all the same (a timeout, a lost
		// connection): the run either reaches its caller or is cancelled.
		if !s.settleFailedStart(ctx, req.Caller, id, err) {
			return signals.Snapshot{}, fmt.Errorf("start run of tool %q: %w", tool.Name, err)
		}
	} else {
		s.log.Info("run started", append(telemetry.RunFields(ctx, id, tool.Name),
			zap.String("taskQueue", tool.TaskQueue), zap.String("transport", req.Transport), zap.String("temporalRunId", run.GetRunID()))...)
	}

	now := time.Now().UTC()
	created := signals.Snapshot{
		RunID: id, Tool: tool.Name, Status: status, Owner: owner,
		Transport: req.Transport, CreatedAt: now, UpdatedAt: now,
		StatusMessage: status.Message(), LastSequence: -1,
	}
	var facts runFacts
	if tool.Plain() {
		facts = factPlain
	}
	s.known.update(id, func(e *memoEntry) {
		e.facts |= facts | factTraced
		e.tool, e.trace = tool.Name, traceParent
	})
	if tool.Plain() {
		return created, nil
	}
	if !s.opts.WaitFirstTask {
		// The run exists: a getRun query sent now waits for its first
		// workflow task, so an immediate Get resolves.
		return created, nil
	}
	qctx, qcancel := context.WithTimeout(sctx, s.opts.StartQueryTimeout)
	defer qcancel()
	snap, err := s.query(qctx, id)
	if err != nil {
		s.log.Warn("first getRun query of a new run failed; reporting it pending", append(telemetry.RunFields(ctx, id, tool.Name), zap.Error(err))...)
		return created, nil
	}
	return snap, nil
}

// authorize checks the id's grammar and tenant segment before any lookup.
func authorize(caller signals.Subject, id string) error {
	if !runid.Valid(id) {
		return ErrNotFound
	}
	if runid.Tenant(id) != caller.Tenant {
		return ErrTenantMismatch
	}
	return nil
}

// Get answers getRun: the run's current snapshot. A running run answers
// the getRun query; a closed run is read from its close event without a
// worker replaying the history (see read).
func (s *Service) Get(ctx context.Context, caller signals.Subject, runID string) (signals.Snapshot, error) {
	if err := authorize(caller, runID); err != nil {
		return signals.Snapshot{}, err
	}
	r, err := s.read(ctx, runID, caller.Tenant)
	return r.snap, err
}

// describe describes the run id of tenant: ErrNotFound for a missing run
// and for one that is not tenant's (see ownedBy).
func (s *Service) describe(ctx context.Context, id, tenant string) (*workflowpb.WorkflowExecutionInfo, error) {
	desc, err := s.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, s.lookupErr(id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if !s.ownedBy(info, tenant) {
		return nil, ErrNotFound
	}
	return info, nil
}

// ownedBy reports whether the run a describe call found is tenant's: its
// tenant search attribute names tenant (a run no service started has
// none).
func (s *Service) ownedBy(info *workflowpb.WorkflowExecutionInfo, tenant string) bool {
	t, ok := s.keyword(info.GetSearchAttributes(), signals.SearchAttrTenant)
	return ok && t == tenant
}

// loadDescribed reads the run by describing it first. It returns the
// snapshot, the event log when the run is closed (nil otherwise), and the
// history length the describe call saw, which Await follows the history
// from. Get, Resolve and Cancel use read, which costs one round trip less.
func (s *Service) loadDescribed(ctx context.Context, id, tenant string) (signals.Snapshot, []signals.Event, int64, error) {
	desc, err := s.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return signals.Snapshot{}, nil, 0, s.lookupErr(id, err)
	}
	return s.fromDescribe(ctx, id, tenant, desc.GetWorkflowExecutionInfo(), true)
}

// fromDescribe reads the run a describe call found. A running run that
// follows the run contract is asked by the getRun query when ask is set,
// and summarised from the describe data otherwise (or when the query
// fails).
func (s *Service) fromDescribe(ctx context.Context, id, tenant string, info *workflowpb.WorkflowExecutionInfo, ask bool) (signals.Snapshot, []signals.Event, int64, error) {
	if !s.ownedBy(info, tenant) {
		return signals.Snapshot{}, nil, 0, ErrNotFound
	}
	hlen := info.GetHistoryLength()
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		if s.plain(info) || !ask {
			return s.fromInfo(info), nil, hlen, nil
		}
		snap, err := s.query(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return signals.Snapshot{}, nil, 0, fmt.Errorf("get run %s: %w", id, ctx.Err())
			}
			// No worker has answered yet (e.g. the first workflow task is
			// pending): describe what Temporal knows.
			s.log.Debug("getRun query failed; answering from describe", s.fields(ctx, id, zap.Error(err))...)
			return s.fromInfo(info), nil, hlen, nil
		}
		return snap, nil, hlen, nil
	}
	rec, err := s.closeRecord(ctx, info)
	if err != nil {
		return signals.Snapshot{}, nil, 0, err
	}
	return rec.Snapshot, rec.Events, hlen, nil
}

// lookupErr maps a Temporal lookup error.
func (s *Service) lookupErr(id string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return ErrNotFound
	}
	var inv *serviceerror.InvalidArgument
	if errors.As(err, &inv) {
		return ErrNotFound
	}
	return fmt.Errorf("describe run %s: %w", id, err)
}

func (s *Service) query(ctx context.Context, id string) (signals.Snapshot, error) {
	v, err := s.client.QueryWorkflow(ctx, id, "", signals.QueryGetRun)
	if err != nil {
		return signals.Snapshot{}, fmt.Errorf("query %s of run %s: %w", signals.QueryGetRun, id, err)
	}
	var snap signals.Snapshot
	if err := v.Get(&snap); err != nil {
		return signals.Snapshot{}, fmt.Errorf("decode %s of run %s: %w", signals.QueryGetRun, id, err)
	}
	return snap, nil
}

func (s *Service) keyword(sa *commonpb.SearchAttributes, name string) (string, bool) {
	p, ok := sa.GetIndexedFields()[name]
	if !ok {
		return "", false
	}
	var v string
	if err := s.dc.FromPayload(p, &v); err != nil {
		return "", false
	}
	return v, true
}

// plain reports whether the run's tool follows signals.ContractPlain.
func (s *Service) plain(info *workflowpb.WorkflowExecutionInfo) bool {
	p, ok := info.GetMemo().GetFields()[signals.MemoContract]
	if !ok {
		return false
	}
	var c signals.Contract
	return s.dc.FromPayload(p, &c) == nil && c == signals.ContractPlain
}

// published decodes the state a running run published in its memo.
func (s *Service) published(info *workflowpb.WorkflowExecutionInfo) (signals.PublishedState, bool) {
	p, ok := info.GetMemo().GetFields()[signals.MemoState]
	if !ok {
		return signals.PublishedState{}, false
	}
	var pub signals.PublishedState
	if err := s.dc.FromPayload(p, &pub); err != nil || !pub.Status.Valid() || pub.Status.Terminal() {
		return signals.PublishedState{}, false
	}
	return pub, true
}

// fromInfo builds a summary snapshot from visibility data alone.
func (s *Service) fromInfo(info *workflowpb.WorkflowExecutionInfo) signals.Snapshot {
	snap := signals.Snapshot{
		RunID:        info.GetExecution().GetWorkflowId(),
		LastSequence: -1,
		CreatedAt:    info.GetStartTime().AsTime(),
		UpdatedAt:    info.GetStartTime().AsTime(),
	}
	if t := info.GetCloseTime(); t != nil {
		snap.UpdatedAt = t.AsTime()
	}
	snap.Tool, _ = s.keyword(info.GetSearchAttributes(), signals.SearchAttrTool)
	st, _ := s.keyword(info.GetSearchAttributes(), signals.SearchAttrStatus)
	snap.Status = signals.Status(st)
	if p, ok := info.GetMemo().GetFields()[signals.MemoOwner]; ok {
		_ = s.dc.FromPayload(p, &snap.Owner)
	}
	if p, ok := info.GetMemo().GetFields()[signals.MemoTransport]; ok {
		_ = s.dc.FromPayload(p, &snap.Transport)
	}
	// Temporal's own status wins when it closed the run behind the
	// harness's back (terminated, timed out) or the attribute lags.
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		if pub, ok := s.published(info); ok {
			// What the run published (its memo) tells the open
			// interrupts too; a run started before the harness published
			// has only the status attribute.
			snap.Status, snap.Interrupts, snap.CancelReason = pub.Status, pub.Interrupts, pub.CancelReason
			snap.LastSequence = pub.LastSequence
			if !pub.UpdatedAt.IsZero() {
				snap.UpdatedAt = pub.UpdatedAt
			}
		}
		if !snap.Status.Valid() || snap.Status.Terminal() {
			snap.Status = signals.StatusPending
		}
		if s.plain(info) {
			snap.Status = signals.StatusRunning
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		snap.Status = signals.StatusCompleted
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		snap.Status = signals.StatusCancelled
	default:
		snap.Status = signals.StatusFailed
	}
	snap.StatusMessage = snap.Status.Message()
	return snap
}

// closeRecord reads the RunRecord a closed run left in its close event.
func (s *Service) closeRecord(ctx context.Context, info *workflowpb.WorkflowExecutionInfo) (signals.RunRecord, error) {
	last, err := s.closeEvent(ctx, info.GetExecution().GetWorkflowId(), info.GetExecution().GetRunId())
	if err != nil {
		return signals.RunRecord{}, err
	}
	if rec, ok := s.decodeClose(last); ok {
		return rec, nil
	}
	return s.closedOutside(info, last), nil
}

// closeEvent reads the close event of a closed run (runID "" is the
// current run of the workflow ID). The server long-polls this request
// while the run is open, so call it only for a closed run.
func (s *Service) closeEvent(ctx context.Context, id, runID string) (*historypb.HistoryEvent, error) {
	it := s.client.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	var last *historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("read close event of run %s: %w", id, s.lookupErr(id, err))
		}
		last = ev
	}
	return last, nil
}

// closedOutside describes a run that closed without a RunRecord in its
// close event (last): a plain workflow, or a run terminated, timed out or
// failed outside the harness.
func (s *Service) closedOutside(info *workflowpb.WorkflowExecutionInfo, last *historypb.HistoryEvent) signals.RunRecord {
	snap := s.fromInfo(info)
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		snap.CancelReason = "terminated"
		if r := last.GetWorkflowExecutionTerminatedEventAttributes().GetReason(); r != "" {
			snap.CancelReason = "terminated: " + r
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		snap.CancelReason = signals.ReasonCallerRequested
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		snap.Result, snap.Outputs = s.plainResult(last.GetWorkflowExecutionCompletedEventAttributes().GetResult())
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		snap.Error = &signals.RunError{Code: "workflow_timed_out", Message: "the run timed out"}
	default:
		msg := "the run ended without a result"
		if f := last.GetWorkflowExecutionFailedEventAttributes().GetFailure(); f != nil {
			msg = f.GetMessage()
		}
		snap.Error = &signals.RunError{Code: "workflow_failed", Message: msg}
	}
	if snap.Status == signals.StatusFailed {
		snap.Result = &signals.ToolResult{IsError: true, Content: []signals.Content{{Type: "text", Text: snap.Error.Message}}}
	}
	return signals.RunRecord{Snapshot: snap}
}

// plainResult turns the result of a workflow that closed without a
// RunRecord into a tool result: the JSON value as text, and as structured
// content (an object as is, anything else as {"result": value}).
func (s *Service) plainResult(p *commonpb.Payloads) (*signals.ToolResult, json.RawMessage) {
	res := &signals.ToolResult{Content: []signals.Content{}}
	if len(p.GetPayloads()) == 0 {
		res.Content = append(res.Content, signals.Content{Type: "text", Text: "the run completed"})
		return res, nil
	}
	var v any
	if err := s.dc.FromPayload(p.GetPayloads()[0], &v); err != nil {
		res.Content = append(res.Content, signals.Content{Type: "text", Text: "the run completed with a result that is not JSON"})
		return res, nil
	}
	text, _ := json.Marshal(v)
	if str, ok := v.(string); ok {
		res.Content = append(res.Content, signals.Content{Type: "text", Text: str})
	} else {
		res.Content = append(res.Content, signals.Content{Type: "text", Text: string(text)})
	}
	if _, ok := v.(map[string]any); !ok {
		text, _ = json.Marshal(map[string]any{"result": v})
	}
	res.StructuredContent = text
	return res, text
}

// decodeClose extracts the RunRecord from a close event.
func (s *Service) decodeClose(ev *historypb.HistoryEvent) (signals.RunRecord, bool) {
	var payloads *commonpb.Payloads
	switch {
	case ev.GetWorkflowExecutionCompletedEventAttributes() != nil:
		payloads = ev.GetWorkflowExecutionCompletedEventAttributes().GetResult()
	case ev.GetWorkflowExecutionFailedEventAttributes() != nil:
		payloads = ev.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetApplicationFailureInfo().GetDetails()
	case ev.GetWorkflowExecutionCanceledEventAttributes() != nil:
		payloads = ev.GetWorkflowExecutionCanceledEventAttributes().GetDetails()
	}
	if len(payloads.GetPayloads()) == 0 {
		return signals.RunRecord{}, false
	}
	var rec signals.RunRecord
	if err := s.dc.FromPayload(payloads.GetPayloads()[0], &rec); err != nil || rec.Snapshot.RunID == "" {
		return signals.RunRecord{}, false
	}
	return rec, true
}

// Events answers pollRunEvents: the events after afterSequence and the
// run's snapshot. When there are none and wait > 0, it waits up to wait for
// the next event or the run's end.
func (s *Service) Events(ctx context.Context, caller signals.Subject, runID string, afterSequence int, wait time.Duration) (signals.EventPage, signals.Snapshot, error) {
	if err := authorize(caller, runID); err != nil {
		return signals.EventPage{}, signals.Snapshot{}, err
	}
	cur, err := s.read(ctx, runID, caller.Tenant)
	if err != nil {
		return signals.EventPage{}, signals.Snapshot{}, err
	}
	snap, events, described := cur.snap, cur.events, cur.described
	if snap.LastSequence <= afterSequence && !snap.Status.Terminal() && wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		next, err := s.await(wctx, runID, caller.Tenant, func(x signals.Snapshot) bool { return x.LastSequence > afterSequence })
		cancel()
		switch {
		case err == nil:
			snap, described = next, false
		case ctx.Err() != nil:
			return signals.EventPage{}, signals.Snapshot{}, ctx.Err()
		case !errors.Is(err, context.DeadlineExceeded):
			return signals.EventPage{}, signals.Snapshot{}, err
		}
		if snap.Status.Terminal() {
			if cur, err = s.read(ctx, runID, caller.Tenant); err != nil {
				return signals.EventPage{}, signals.Snapshot{}, err
			}
			snap, events = cur.snap, cur.events
		}
	}
	if snap.Status.Terminal() {
		page := signals.EventPage{LastSequence: snap.LastSequence, Events: []signals.Event{}}
		for _, e := range events {
			if e.Sequence > afterSequence {
				page.Events = append(page.Events, e)
			}
		}
		return page, snap, nil
	}
	if snap.LastSequence <= afterSequence {
		return signals.EventPage{Events: []signals.Event{}, LastSequence: snap.LastSequence}, snap, nil
	}
	if described {
		// No worker answered getRun, so none would answer the events
		// query: no events until one does (the caller keeps its place).
		return signals.EventPage{Events: []signals.Event{}, LastSequence: afterSequence}, snap, nil
	}
	v, err := s.client.QueryWorkflow(ctx, runID, "", signals.QueryEvents, signals.EventsQuery{AfterSequence: afterSequence})
	if err != nil {
		return signals.EventPage{}, signals.Snapshot{}, fmt.Errorf("query events of run %s: %w", runID, err)
	}
	var page signals.EventPage
	if err := v.Get(&page); err != nil {
		return signals.EventPage{}, signals.Snapshot{}, fmt.Errorf("decode events of run %s: %w", runID, err)
	}
	if page.Events == nil {
		page.Events = []signals.Event{}
	}
	return page, snap, nil
}

// Resolve answers resolveInterruptByRun: it checks that the interrupt is
// open and that the caller is an eligible approver, signals the resolution
// (with ResolvedBy set to the caller) and returns the snapshot after the run
// applied it. Of two concurrent resolutions one returns nil and the other
// ErrAlreadyResolved. It reads the run once before the signal and once
// after; ResolveHeld saves the first read when the caller holds a snapshot.
func (s *Service) Resolve(ctx context.Context, caller signals.Subject, runID string, r signals.Resolution) (signals.Snapshot, error) {
	if err := authorize(caller, runID); err != nil {
		return signals.Snapshot{}, err
	}
	cur, err := s.read(ctx, runID, caller.Tenant)
	if err != nil {
		return signals.Snapshot{}, err
	}
	return s.resolve(ctx, caller, runID, cur.snap, r)
}

// ResolveHeld is Resolve for a caller that read the run (Get) in the same
// request: the interrupt's openness and the caller's eligibility are
// checked against held instead of a new read, so the resolution costs the
// signal and the query that confirms it. The run applies a resolution only
// when it is still the first eligible one of an open interrupt, so a held
// snapshot that went stale in between yields ErrAlreadyResolved or
// ErrTerminal, as with Resolve. A held snapshot of another run or tenant
// is ignored (the run is read again).
func (s *Service) ResolveHeld(ctx context.Context, caller signals.Subject, runID string, held signals.Snapshot, r signals.Resolution) (signals.Snapshot, error) {
	if err := authorize(caller, runID); err != nil {
		return signals.Snapshot{}, err
	}
	if held.RunID != runID || held.Owner.Tenant != caller.Tenant {
		return s.Resolve(ctx, caller, runID, r)
	}
	return s.resolve(ctx, caller, runID, held, r)
}

// resolve checks r against snap, signals it and reads the run after the
// run applied it (queries are strongly consistent: the query waits for the
// workflow task the signal caused).
func (s *Service) resolve(ctx context.Context, caller signals.Subject, runID string, snap signals.Snapshot, r signals.Resolution) (signals.Snapshot, error) {
	it, open := snap.Interrupt(r.InterruptID)
	if !open {
		if _, done := snap.ResolvedBy(r.InterruptID); done {
			return snap, ErrAlreadyResolved
		}
		if snap.Status.Terminal() {
			return snap, ErrTerminal
		}
		return snap, ErrNotOpen
	}
	if !it.Eligible(caller) {
		return snap, ErrNotEligible
	}
	switch r.Action {
	case signals.ActionAccept, signals.ActionDecline, signals.ActionCancel:
	default:
		return snap, fmt.Errorf("resolve interrupt: unknown action %q", r.Action)
	}
	r.ResolvedBy = caller
	nonce := make([]byte, 12)
	if _, err := io.ReadFull(s.rand, nonce); err != nil {
		return snap, fmt.Errorf("resolve interrupt: %w", err)
	}
	r.RequestID = base64.RawURLEncoding.EncodeToString(nonce)
	if err := s.client.SignalWorkflow(ctx, runID, "", signals.SignalResolveInterrupt, r); err != nil {
		if !errors.Is(s.lookupErr(runID, err), ErrNotFound) {
			return snap, fmt.Errorf("signal resolution to run %s: %w", runID, err)
		}
		// The run closed in between, perhaps because a concurrent
		// resolution of this very interrupt finished it.
		final, lerr := s.read(ctx, runID, caller.Tenant)
		if lerr != nil {
			return snap, ErrTerminal
		}
		if _, done := final.snap.ResolvedBy(r.InterruptID); done {
			return final.snap, ErrAlreadyResolved
		}
		return final.snap, ErrTerminal
	}
	if e, _ := s.known.entry(runID); s.workers.unserved(ctx, e.queue) {
		// No worker would answer the read that confirms it.
		return snap, ErrNotApplied
	}
	cur, err := s.readAfterSignal(ctx, runID, caller.Tenant)
	if err != nil {
		return snap, err
	}
	if cur.described {
		// No worker answered getRun (what the run published holds no
		// resolutions).
		return cur.snap, ErrNotApplied
	}
	after := cur.snap
	got, done := after.ResolvedBy(r.InterruptID)
	switch {
	case done && got.RequestID == r.RequestID:
		return after, nil
	case done:
		return after, ErrAlreadyResolved
	case after.Status.Terminal():
		return after, ErrTerminal
	default:
		return after, ErrNotOpen
	}
}

// Cancel answers cancelRun: it records the reason with the run (the
// cancelReason signal; a plain workflow has no handler for it and gets
// none) and requests workflow cancellation. It returns ErrTerminal (and the
// run's snapshot) when the run has already ended.
//
// It returns once Temporal accepted the request, without reading the run
// afterwards: the snapshot reads cancelling, with the reason; the run reads
// cancelling, then cancelled, once it handled the request. A run of the run
// contract that this process started or read lately (Service.known) is
// cancelled with the same two calls as the raw SDK's: the signal fails if
// the run has closed. Any other run is described first, to check its
// tenant, whether it is open and whether it is plain (Temporal accepts a
// cancellation request for a closed run, so a plain run needs the check).
func (s *Service) Cancel(ctx context.Context, caller signals.Subject, runID, reason string) (signals.Snapshot, error) {
	if err := authorize(caller, runID); err != nil {
		return signals.Snapshot{}, err
	}
	if reason == "" {
		reason = signals.ReasonCallerRequested
	}
	snap := signals.Snapshot{RunID: runID, Owner: signals.Owner{Tenant: caller.Tenant}, LastSequence: -1}
	facts, known := s.known.get(runID)
	if facts&factClosed != 0 {
		r, err := s.read(ctx, runID, caller.Tenant)
		if err != nil {
			return signals.Snapshot{}, err
		}
		return r.snap, ErrTerminal
	}
	plain := facts&factPlain != 0
	if !known || plain {
		info, err := s.describe(ctx, runID, caller.Tenant)
		if err != nil {
			return signals.Snapshot{}, err
		}
		s.noteDescribed(runID, info)
		plain = s.plain(info)
		if plain {
			facts = factPlain
		}
		if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			s.known.add(runID, facts|factClosed)
			rec, err := s.closeRecord(ctx, info)
			if err != nil {
				return signals.Snapshot{}, err
			}
			return rec.Snapshot, ErrTerminal
		}
		s.known.add(runID, facts)
		snap = s.fromInfo(info)
	}
	if !plain {
		if err := s.client.SignalWorkflow(ctx, runID, "", signals.SignalCancelReason,
			signals.CancelRequest{Reason: reason, CancelledBy: caller}); err != nil {
			if errors.Is(s.lookupErr(runID, err), ErrNotFound) {
				return s.terminalSnapshot(ctx, runID, caller.Tenant, snap)
			}
			return snap, fmt.Errorf("signal cancel reason to run %s: %w", runID, err)
		}
	}
	if err := s.client.CancelWorkflow(ctx, runID, ""); err != nil {
		if errors.Is(s.lookupErr(runID, err), ErrNotFound) {
			return s.terminalSnapshot(ctx, runID, caller.Tenant, snap)
		}
		return snap, fmt.Errorf("cancel run %s: %w", runID, err)
	}
	s.log.Info("run cancel requested", s.fields(ctx, runID, zap.String("reason", reason))...)
	snap.Status, snap.StatusMessage = signals.StatusCancelling, signals.StatusCancelling.Message()
	snap.CancelReason = reason
	return snap, nil
}

// terminalSnapshot reads a run that closed (or disappeared) while being
// cancelled: ErrTerminal with its snapshot, or ErrNotFound.
func (s *Service) terminalSnapshot(ctx context.Context, id, tenant string, fallback signals.Snapshot) (signals.Snapshot, error) {
	r, err := s.read(ctx, id, tenant)
	switch {
	case errors.Is(err, ErrNotFound):
		return signals.Snapshot{}, ErrNotFound
	case err != nil:
		return fallback, ErrTerminal
	}
	return r.snap, ErrTerminal
}

// Await blocks until done(snapshot) holds or the run is terminal, and
// returns that snapshot. It follows the run's history with a long poll and
// asks getRun again only when a workflow task completed, so a waiting call
// costs no polling. It returns ctx's error when ctx ends first.
func (s *Service) Await(ctx context.Context, caller signals.Subject, runID string, done func(signals.Snapshot) bool) (signals.Snapshot, error) {
	if err := authorize(caller, runID); err != nil {
		return signals.Snapshot{}, err
	}
	return s.await(ctx, runID, caller.Tenant, done)
}

func (s *Service) await(ctx context.Context, id, tenant string, done func(signals.Snapshot) bool) (signals.Snapshot, error) {
	snap, _, seen, err := s.loadDescribed(ctx, id, tenant)
	if err != nil {
		return signals.Snapshot{}, err
	}
	// A history long poll can fail for reasons that are not the run's (the
	// run's history branch moved on, a frontend restart): reload the run and
	// follow its history again, a few times in a row at most.
	const maxRestarts = 5
	for restarts := 0; ; restarts++ {
		if done(snap) || snap.Status.Terminal() {
			return snap, nil
		}
		var followErr error
		snap, _, followErr = s.follow(ctx, id, tenant, snap, seen, done)
		switch {
		case followErr == nil:
			return snap, nil
		case ctx.Err() != nil:
			return snap, ctx.Err()
		case errors.Is(followErr, context.DeadlineExceeded):
			return snap, followErr
		case errors.Is(followErr, errHistory) && restarts < maxRestarts:
			s.log.Debug("history long poll failed; following the run again", s.fields(ctx, id, zap.Error(followErr))...)
			if snap, _, seen, err = s.loadDescribed(ctx, id, tenant); err != nil {
				return snap, err
			}
		default:
			return snap, followErr
		}
	}
}

// errHistory marks a failure of the history long poll itself.
var errHistory = errors.New("follow history")

// follow reads the run's history by long poll from the start and reloads
// the snapshot after each workflow task (events up to seen are known
// already), until done holds or the run closes.
func (s *Service) follow(ctx context.Context, id, tenant string, snap signals.Snapshot, seen int64, done func(signals.Snapshot) bool) (signals.Snapshot, int64, error) {
	it := s.client.GetWorkflowHistory(ctx, id, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return snap, seen, ctx.Err()
			}
			if endedAtDeadline(ctx, err) {
				// The server ended the long poll at the caller's deadline
				// a moment before ctx expired.
				return snap, seen, context.DeadlineExceeded
			}
			return snap, seen, fmt.Errorf("%w of run %s: %w", errHistory, id, err)
		}
		if ev.GetEventId() <= seen {
			continue
		}
		switch {
		case ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			// Still running (the run was authorized by the first load):
			// the getRun query alone tells the new state.
			if next, err := s.query(ctx, id); err == nil {
				snap, seen = next, ev.GetEventId()
			} else if snap, _, seen, err = s.loadDescribed(ctx, id, tenant); err != nil {
				return snap, seen, err
			}
		case isCloseEvent(ev.GetEventType()):
			if snap, _, seen, err = s.loadDescribed(ctx, id, tenant); err != nil {
				return snap, seen, err
			}
		default:
			continue
		}
		if done(snap) || snap.Status.Terminal() {
			return snap, seen, nil
		}
	}
	if ctx.Err() != nil {
		return snap, seen, ctx.Err()
	}
	// The history ended (the run closed): read the final state.
	snap, _, seen, err := s.loadDescribed(ctx, id, tenant)
	return snap, seen, err
}

// endedAtDeadline reports whether err is the server ending a long poll at
// ctx's deadline, a moment before ctx itself expires: DeadlineExceeded, or
// Canceled (RST_STREAM CANCEL) with the deadline less than a second away.
// The SDK returns these as serviceerror values, which status.Code does not
// read, hence serviceerror.ToStatus.
func endedAtDeadline(ctx context.Context, err error) bool {
	code := serviceerror.ToStatus(err).Code()
	if code == codes.DeadlineExceeded || status.Code(err) == codes.DeadlineExceeded {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && code == codes.Canceled && time.Until(deadline) < time.Second
}

func isCloseEvent(t enumspb.EventType) bool {
	switch t {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return true
	}
	return false
}

// List answers listRuns from Temporal visibility: the caller's tenant's
// runs, filtered by tool and status, newest first in visibility's order:
// open runs first (latest started first), then closed runs (latest closed
// first). SQL visibility cannot order by anything else. Each entry is a summary
// snapshot built from visibility data (no query per run).
func (s *Service) List(ctx context.Context, caller signals.Subject, req ListRequest) (ListPage, error) {
	if !runid.ValidTenant(caller.Tenant) {
		return ListPage{}, fmt.Errorf("list runs: invalid tenant %q", caller.Tenant)
	}
	limit := req.Limit
	switch {
	case limit == 0:
		limit = DefaultPageSize
	case limit < 0 || limit > MaxPageSize:
		return ListPage{}, fmt.Errorf("list runs: limit %d is outside 1..%d", limit, MaxPageSize)
	}
	var token []byte
	if req.Cursor != "" {
		var err error
		if token, err = s.openCursor(caller.Tenant, req, req.Cursor); err != nil {
			return ListPage{}, fmt.Errorf("list runs: %w", err)
		}
	}
	q := []string{fmt.Sprintf("%s = '%s'", signals.SearchAttrTenant, caller.Tenant)}
	if req.Tool != "" {
		if strings.ContainsAny(req.Tool, `'"\`) {
			return ListPage{}, fmt.Errorf("list runs: invalid workflowId %q", req.Tool)
		}
		q = append(q, fmt.Sprintf("%s = '%s'", signals.SearchAttrTool, req.Tool))
	}
	if req.Status != "" {
		if !req.Status.Valid() {
			return ListPage{}, fmt.Errorf("list runs: unknown status %q", req.Status)
		}
		q = append(q, fmt.Sprintf("%s = '%s'", signals.SearchAttrStatus, req.Status))
	}
	resp, err := s.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace:     s.opts.Namespace,
		PageSize:      int32(limit),
		NextPageToken: token,
		Query:         strings.Join(q, " AND "),
	})
	if err != nil {
		if serr := s.searchAttributesErr(ctx, err); serr != nil {
			return ListPage{}, fmt.Errorf("list runs: %w", serr)
		}
		var inv *serviceerror.InvalidArgument
		if len(token) > 0 && errors.As(err, &inv) {
			return ListPage{}, fmt.Errorf("list runs: %w: %v", ErrBadCursor, err)
		}
		return ListPage{}, fmt.Errorf("list runs: %w", err)
	}
	page := ListPage{Runs: make([]signals.Snapshot, 0, len(resp.GetExecutions()))}
	for _, info := range resp.GetExecutions() {
		page.Runs = append(page.Runs, s.fromInfo(info))
	}
	if len(resp.GetNextPageToken()) > 0 {
		page.NextCursor = s.sealCursor(caller.Tenant, req, resp.GetNextPageToken())
	}
	return page, nil
}
