package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"

	"github.com/openwop/temporal-mcp/signals"
)

// Get answers getRun: the run's current snapshot. A running run answers
// the getRun query; a closed run is read from its close event without a
// worker replaying the history (see read). With AllowStale, a poll whose
// read is slow may be answered with a recent reading.
func (s *Service) Get(ctx context.Context, caller signals.Subject, runID string, opts ...ReadOption) (signals.Snapshot, error) {
	if err := authorize(caller, runID); err != nil {
		return signals.Snapshot{}, err
	}
	r, err := s.rd.readKnowing(ctx, runID, caller.Tenant, staleBound(opts), knownOf(opts))
	return r.snap, err
}

// readKnowing is readShared, then, when known refuses the reading (it may
// predate a question: Showing, AskingAt), one read of the run anew, kept
// for the next callers.
func (rd *reader) readKnowing(ctx context.Context, id, tenant string, stale func(signals.Snapshot) time.Duration, known func(signals.Snapshot) bool) (reading, error) {
	r, err := rd.readShared(ctx, id, tenant, stale)
	if err != nil || known(r.snap) {
		return r, err
	}
	return rd.readAnew(ctx, id, tenant)
}

// readAnew reads the run now, sharing no read begun before, and keeps the
// reading.
func (rd *reader) readAnew(ctx context.Context, id, tenant string) (reading, error) {
	epoch, start := rd.reads.currentEpoch(), time.Now()
	r, err := rd.read(ctx, id, tenant)
	if err != nil {
		return reading{}, err
	}
	rd.reads.put(id, r, epoch, time.Since(start))
	return r, nil
}

// reading is what read learned about a run.
type reading struct {
	snap signals.Snapshot
	// events is the event log of a closed run whose close event holds a
	// RunRecord; nil otherwise.
	events []signals.Event
	// plain reports a run whose tool follows signals.ContractPlain. It is
	// known only when the run was described (a run that answers getRun
	// follows the run contract).
	plain bool
	// described reports a running run summarised from a describe call
	// (no worker answered): snap holds what the run published, not its
	// event log.
	described bool
}

// read reads a run of tenant in as few round trips as Temporal allows:
//
//   - The getRun query first, with QueryRejectCondition NOT_OPEN: a running
//     run answers it (one round trip), and the tenant is checked against the
//     snapshot's owner.
//   - A closed run is rejected by the server before any worker replays it;
//     its snapshot is read from the RunRecord in its close event (a second
//     round trip), or, when the close event holds none (a plain workflow, a
//     run terminated outside the harness), from a describe call (a third).
//   - When the query cannot answer (no worker, a plain workflow without a
//     getRun handler, a run whose first workflow task failed), the run is
//     described and summarised from what Temporal knows: the state the run
//     published in its memo (status, open interrupts), or for a run that
//     publishes none its status attribute.
//
// The query waits at most Options.QueryPatience: no worker answers it
// while none polls the run's task queue, and Temporal would hold it until
// the deadline. A run that does not answer in time marks its task queue
// unserved (reader.workers), and while it is, reads of its runs skip the
// query and answer from the describe call at once. A run whose queue is not
// known yet is described first while any queue is unserved.
//
// What reader.known remembers saves the round trips that would carry no
// information: a run known to be closed skips the query (its close event
// is read at once), a run known to be plain skips it too (it is described
// at once).
//
// The tenant segment of id has been checked by the caller; a run whose
// recorded owner is another tenant (or that no service started) reads
// ErrNotFound, like a missing run.
func (rd *reader) read(ctx context.Context, id, tenant string) (reading, error) {
	return rd.readRun(ctx, id, tenant, rd.opts.QueryPatience)
}

// readAfterSignal is read for a caller that must see the effect of a
// signal it sent: what a run published lags its getRun answer (it holds no
// resolutions), so the query waits as long as ctx allows, and is asked
// even while the run's task queue is marked unserved.
func (rd *reader) readAfterSignal(ctx context.Context, id, tenant string) (reading, error) {
	return rd.readRun(ctx, id, tenant, -1)
}

// readRun is read with the given query patience (negative: no bound and
// no shortcut for unserved task queues).
func (rd *reader) readRun(ctx context.Context, id, tenant string, patience time.Duration) (reading, error) {
	entry, _ := rd.known.entry(id)
	facts := entry.facts
	if facts&factClosed != 0 {
		return rd.readClosed(ctx, id, tenant)
	}
	var (
		noAnswer bool      // the query got no answer in time
		sent     time.Time // when it was sent
		// told: the target the watch was told of a late query (zero:
		// none)
		told target
		// askLater: the run is described first (its queue is unknown
		// while some queue is unserved) and queried when its queue is
		// served.
		askLater bool
	)
	if facts&factPlain == 0 {
		switch {
		case patience >= 0 && rd.workers.unserved(ctx, entry.target):
		case patience >= 0 && entry.target.queue == "" && rd.workers.anyDown():
			askLater = true
		default:
			sent = time.Now()
			// The wait may mark the target unserved only when a describe
			// call told it: a run pinned to a version the memo does not
			// know yet is not served by other builds polling its queue.
			r, answered, late, err := rd.queryRun(ctx, id, tenant, entry.target, entry.described, patience)
			if answered || err != nil {
				return r, err
			}
			// A late query of a run whose target was known has told the
			// worker watch already.
			noAnswer = late
			if entry.described {
				told = entry.target
			}
		}
	}
	desc, err := rd.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return reading{}, lookupErr(id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	running := info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	serves := servedBy(info)
	if noAnswer && running && serves != told {
		// A pinned run whose version the memo did not know yet: workers
		// of other builds of its queue do not serve it.
		rd.workers.late(ctx, serves, sent, true)
	}
	r := reading{plain: rd.plain(info)}
	if askLater && running && !r.plain && !rd.workers.unserved(ctx, serves) {
		if !rd.ownedBy(info, tenant) {
			return reading{}, ErrNotFound
		}
		qr, answered, _, err := rd.queryRun(ctx, id, tenant, serves, true, patience)
		if answered || err != nil {
			if err == nil {
				rd.known.setTarget(id, serves)
			}
			return qr, err
		}
	}
	r.snap, r.events, _, err = rd.fromDescribe(ctx, id, tenant, desc, false)
	r.described = running
	if err == nil && running && !r.plain && rd.workers.unserved(ctx, serves) {
		// Read from what the run last published: it is not moving.
		r.snap.StatusMessage = stalled(r.snap.StatusMessage, serves)
	}
	if err == nil {
		f := r.facts()
		if !running {
			f |= factClosed
		}
		rd.known.add(id, f)
		rd.noteDescribed(id, info)
	}
	return r, err
}

// stalled is the status message of a running run that no worker serves:
// msg, the run's own, and that it waits for a worker of t, naming the
// build and deployment of a pinned run (workers of other builds of the
// queue do not serve it). It names no tool content.
func stalled(msg string, t target) string {
	if t.pinned() {
		return fmt.Sprintf("%s; stalled: the run is pinned to build %q of worker deployment %q and no worker of that build "+
			"polls task queue %q, so the run waits until one does, or until an operator moves it to the current version",
			msg, t.version.BuildID, t.version.DeploymentName, t.queue)
	}
	return fmt.Sprintf("%s; stalled: no worker polls task queue %q, so the run waits until one does", msg, t.queue)
}

// queryRun asks a run served by t its getRun query, waiting at most patience
// (no bound but ctx when it is not positive) unless the worker watch says
// a worker still polls the queue (workers.late): then the run is only
// slow and the read waits for the same query up to slowQueryPatience more,
// rather than adding a describe call to the load of a busy Temporal. It
// reports answered when the query settled the read (an answer, a closed
// run, a missing run); with answered false and a nil error the caller
// describes the run instead, and late tells that the query got no answer
// in time (rather than failing).
func (rd *reader) queryRun(ctx context.Context, id, tenant string, t target, mark bool, patience time.Duration) (r reading, answered, late bool, err error) {
	resp, late, err := rd.awaitQuery(ctx, id, t, mark, patience)
	if late {
		rd.log.Debug("getRun query got no answer in time; describing the run", rd.known.fields(ctx, id)...)
		return reading{}, false, true, nil
	}
	switch {
	case err == nil && resp.QueryRejected != nil:
		r, err := rd.readClosed(ctx, id, tenant)
		if err == nil {
			rd.known.add(id, r.facts()|factClosed)
		}
		return r, true, false, err
	case err == nil:
		var snap signals.Snapshot
		if err := resp.QueryResult.Get(&snap); err != nil {
			return reading{}, true, false, fmt.Errorf("decode %s of run %s: %w", signals.QueryGetRun, id, err)
		}
		rd.workers.answered(t)
		if snap.Owner.Tenant != tenant {
			return reading{}, true, false, ErrNotFound
		}
		rd.known.note(id, snap.Tool, false, "")
		return reading{snap: snap}, true, false, nil
	case missing(err):
		return reading{}, true, false, ErrNotFound
	case ctx.Err() != nil:
		return reading{}, true, false, fmt.Errorf("get run %s: %w", id, ctx.Err())
	}
	late = serviceerror.ToStatus(err).Code() == codes.DeadlineExceeded
	rd.log.Debug("getRun query failed; describing the run", rd.known.fields(ctx, id, zap.Bool("late", late), zap.Error(err))...)
	return reading{}, false, late, nil
}

// awaitQuery sends the getRun query of run id (served by t) and waits for its
// answer as queryRun describes; late reports that it gave up waiting (the
// query is then cancelled).
func (rd *reader) awaitQuery(ctx context.Context, id string, t target, mark bool, patience time.Duration) (resp *client.QueryWorkflowWithOptionsResponse, late bool, err error) {
	req := &client.QueryWorkflowWithOptionsRequest{
		WorkflowID:           id,
		QueryType:            signals.QueryGetRun,
		QueryRejectCondition: enumspb.QUERY_REJECT_CONDITION_NOT_OPEN,
	}
	if patience <= 0 {
		resp, err = rd.client.QueryWorkflowWithOptions(ctx, req)
		return resp, false, err
	}
	// The patience counts from when the query leaves this process: a wait
	// for a call slot (Options.MaxTemporalCalls) is no worker's delay.
	ctx, release, err := rd.limit.hold(ctx)
	if err != nil {
		return nil, false, err
	}
	defer release()
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		resp *client.QueryWorkflowWithOptionsResponse
		err  error
	}
	done := make(chan answer, 1)
	sent := time.Now()
	go func() {
		resp, err := rd.client.QueryWorkflowWithOptions(qctx, req)
		done <- answer{resp, err}
	}()
	wait := time.NewTimer(patience)
	defer wait.Stop()
	select {
	case a := <-done:
		return a.resp, false, a.err
	case <-wait.C:
	}
	// Wait on while a worker serves the queue, checking again after each
	// patience: a worker that stops meanwhile is noticed as soon as when
	// the query was not late.
	giveUp := time.Now().Add(slowQueryPatience)
	for rd.workers.late(ctx, t, sent, mark) && time.Now().Before(giveUp) {
		wait.Reset(patience)
		select {
		case a := <-done:
			return a.resp, false, a.err
		case <-wait.C:
		}
	}
	return nil, true, nil
}

// facts is what r tells about the run for reader.known.
func (r reading) facts() runFacts {
	if r.plain {
		return factPlain
	}
	return 0
}

// readClosed reads a closed run (found closed by the getRun query, or
// known to be): its close event, and a describe call when that holds no
// RunRecord.
func (rd *reader) readClosed(ctx context.Context, id, tenant string) (reading, error) {
	last, err := rd.closeEvent(ctx, id, "")
	if err != nil {
		return reading{}, err
	}
	if rec, ok := rd.decodeClose(last); ok {
		if rec.Snapshot.Owner.Tenant != tenant {
			return reading{}, ErrNotFound
		}
		return reading{snap: rec.Snapshot, events: rec.Events}, nil
	}
	// No RunRecord: what Temporal knows (search attributes, memo, status)
	// comes from a describe call.
	info, err := rd.describe(ctx, id, tenant)
	if err != nil {
		return reading{}, err
	}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		// Cannot happen for a run id (its workflow ID is never reused),
		// but a running run's close event is no answer.
		return reading{}, fmt.Errorf("read run %s: closed, then running", id)
	}
	rec := rd.closedOutside(info, last)
	return reading{snap: rec.Snapshot, events: rec.Events, plain: rd.plain(info)}, nil
}

// closeEvent reads the close event of a closed run (runID "" is the
// current run of the workflow ID). The server long-polls this request
// while the run is open, so call it only for a closed run.
func (rd *reader) closeEvent(ctx context.Context, id, runID string) (*historypb.HistoryEvent, error) {
	it := rd.client.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	var last *historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("read close event of run %s: %w", id, lookupErr(id, err))
		}
		last = ev
	}
	return last, nil
}

// closedOutside describes a run that closed without a RunRecord in its
// close event (last): a plain workflow, or a run terminated, timed out or
// failed outside the harness.
func (rd *reader) closedOutside(info *workflowpb.WorkflowExecutionInfo, last *historypb.HistoryEvent) signals.RunRecord {
	return rd.closeSnapshot(rd.fromInfo(info), last, rd.runTimeout(info))
}

// closeSnapshot is snap, a snapshot of a run that closed without a
// RunRecord, with what its close event last tells: status, result or error,
// cancel reason, and when. timeout is the run timeout the run was started
// with (0: none known), which a timed-out run's message names.
func (rd *reader) closeSnapshot(snap signals.Snapshot, last *historypb.HistoryEvent, timeout signals.Duration) signals.RunRecord {
	if t := last.GetEventTime(); t != nil {
		snap.UpdatedAt = t.AsTime()
	}
	snap.Interrupts = nil
	switch last.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
		snap.Status = signals.StatusCancelled
		snap.CancelReason = "terminated"
		if r := last.GetWorkflowExecutionTerminatedEventAttributes().GetReason(); r != "" {
			snap.CancelReason = "terminated: " + r
		}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		snap.Status = signals.StatusCancelled
		snap.CancelReason = signals.ReasonCallerRequested
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		snap.Status = signals.StatusCompleted
		snap.Result, snap.Outputs = rd.plainResult(last.GetWorkflowExecutionCompletedEventAttributes().GetResult())
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
		snap.Status = signals.StatusFailed
		snap.Error = &signals.RunError{Code: CodeTimedOut, Message: timedOutMessage(timeout)}
	default:
		snap.Status = signals.StatusFailed
		msg := "the run ended without a result"
		if f := last.GetWorkflowExecutionFailedEventAttributes().GetFailure(); f != nil {
			msg = rootMessage(f)
		}
		snap.Error = &signals.RunError{Code: "workflow_failed", Message: msg}
	}
	snap.StatusMessage = snap.Status.Message()
	if snap.Status == signals.StatusFailed {
		snap.Result = &signals.ToolResult{IsError: true, Content: []signals.Content{{Type: "text", Text: snap.Error.Message}}}
	}
	return signals.RunRecord{Snapshot: snap}
}

// rootMessage is the message of a workflow's failure that says why it
// failed: its root cause's (the activity's application error under
// "Activity task failed", a child workflow's under "Child Workflow
// execution failed"), or the nearest non-empty one above it.
func rootMessage(f *failurepb.Failure) string {
	msg := f.GetMessage()
	for c := f.GetCause(); c != nil; c = c.GetCause() {
		if m := c.GetMessage(); m != "" {
			msg = m
		}
	}
	return msg
}

// CodeTimedOut is the error code of a run Temporal closed because its
// execution timeout (the tool's run timeout) expired.
const CodeTimedOut = "workflow_timed_out"

// timedOutMessage is the error message of a timed-out run: it names the
// run timeout when the run recorded one.
func timedOutMessage(timeout signals.Duration) string {
	if timeout <= 0 {
		return "the run timed out"
	}
	return fmt.Sprintf("the run timed out: it was still running when its tool's run timeout of %s expired", timeout)
}

// describe describes the run id of tenant: ErrNotFound for a missing run
// and for one that is not tenant's (see ownedBy).
func (rd *reader) describe(ctx context.Context, id, tenant string) (*workflowpb.WorkflowExecutionInfo, error) {
	desc, err := rd.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, lookupErr(id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if !rd.ownedBy(info, tenant) {
		return nil, ErrNotFound
	}
	return info, nil
}

// ownedBy reports whether the run a describe call found is tenant's: its
// tenant search attribute names tenant (a run no service started has
// none).
func (rd *reader) ownedBy(info *workflowpb.WorkflowExecutionInfo, tenant string) bool {
	t, ok := rd.keyword(info.GetSearchAttributes(), signals.SearchAttrTenant)
	return ok && t == tenant
}

// fromDescribe reads the run a describe call found. A running run that
// follows the run contract is asked by the getRun query when ask is set,
// and summarised from the describe data otherwise (or when the query
// fails).
func (rd *reader) fromDescribe(ctx context.Context, id, tenant string, desc *workflowservice.DescribeWorkflowExecutionResponse, ask bool) (signals.Snapshot, []signals.Event, int64, error) {
	info := desc.GetWorkflowExecutionInfo()
	if !rd.ownedBy(info, tenant) {
		return signals.Snapshot{}, nil, 0, ErrNotFound
	}
	hlen := info.GetHistoryLength()
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		summary := func() signals.Snapshot {
			snap := rd.fromInfo(info)
			rd.markCancelRequested(ctx, id, desc, &snap)
			return snap
		}
		if rd.plain(info) || !ask {
			return summary(), nil, hlen, nil
		}
		snap, err := rd.query(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return signals.Snapshot{}, nil, 0, fmt.Errorf("get run %s: %w", id, ctx.Err())
			}
			// No worker has answered yet (e.g. the first workflow task is
			// pending): describe what Temporal knows.
			rd.log.Debug("getRun query failed; answering from describe", rd.known.fields(ctx, id, zap.Error(err))...)
			return summary(), nil, hlen, nil
		}
		return snap, nil, hlen, nil
	}
	rec, err := rd.closeRecord(ctx, info)
	if err != nil {
		return signals.Snapshot{}, nil, 0, err
	}
	return rec.Snapshot, rec.Events, hlen, nil
}

// closeRecord reads the RunRecord a closed run left in its close event.
func (rd *reader) closeRecord(ctx context.Context, info *workflowpb.WorkflowExecutionInfo) (signals.RunRecord, error) {
	last, err := rd.closeEvent(ctx, info.GetExecution().GetWorkflowId(), info.GetExecution().GetRunId())
	if err != nil {
		return signals.RunRecord{}, err
	}
	if rec, ok := rd.decodeClose(last); ok {
		return rec, nil
	}
	return rd.closedOutside(info, last), nil
}

// fromInfo builds a summary snapshot from visibility data alone.
func (rd *reader) fromInfo(info *workflowpb.WorkflowExecutionInfo) signals.Snapshot {
	snap := signals.Snapshot{
		RunID:        info.GetExecution().GetWorkflowId(),
		LastSequence: -1,
		CreatedAt:    info.GetStartTime().AsTime(),
		UpdatedAt:    info.GetStartTime().AsTime(),
	}
	if t := info.GetCloseTime(); t != nil {
		snap.UpdatedAt = t.AsTime()
	}
	snap.Tool, _ = rd.keyword(info.GetSearchAttributes(), signals.SearchAttrTool)
	st, _ := rd.keyword(info.GetSearchAttributes(), signals.SearchAttrStatus)
	snap.Status = signals.Status(st)
	if p, ok := info.GetMemo().GetFields()[signals.MemoOwner]; ok {
		_ = rd.dc.FromPayload(p, &snap.Owner)
	}
	if p, ok := info.GetMemo().GetFields()[signals.MemoTransport]; ok {
		_ = rd.dc.FromPayload(p, &snap.Transport)
	}
	if p, ok := info.GetMemo().GetFields()[signals.MemoResultLimit]; ok {
		_ = rd.dc.FromPayload(p, &snap.ResultLimit)
	}
	if p, ok := info.GetMemo().GetFields()[signals.MemoCreatedAt]; ok {
		// The creation time every projection reports (a run started
		// before the server recorded it has Temporal's start time).
		var created time.Time
		if rd.dc.FromPayload(p, &created) == nil && !created.IsZero() {
			snap.CreatedAt = created
		}
	}
	// Temporal's own status wins when it closed the run behind the
	// harness's back (terminated, timed out) or the attribute lags.
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		if pub, ok := rd.published(info); ok {
			// What the run published (its memo) tells the open
			// interrupts too; a run started before the harness published
			// has only the status attribute.
			snap.Status, snap.Interrupts, snap.CancelReason = pub.Status, pub.Interrupts, pub.CancelReason
			snap.CancelRequestedAt = pub.CancelRequestedAt
			snap.LastSequence = pub.LastSequence
			if !pub.UpdatedAt.IsZero() {
				snap.UpdatedAt = pub.UpdatedAt
			}
		}
		if !snap.Status.Valid() || snap.Status.Terminal() {
			snap.Status = signals.StatusPending
		}
		if rd.plain(info) {
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

// query asks the run id its getRun query, as long as ctx allows (Start
// with Options.WaitFirstTask, Await after each workflow task, and a
// described run that follows the run contract).
func (rd *reader) query(ctx context.Context, id string) (signals.Snapshot, error) {
	v, err := rd.client.QueryWorkflow(ctx, id, "", signals.QueryGetRun)
	if err != nil {
		return signals.Snapshot{}, fmt.Errorf("query %s of run %s: %w", signals.QueryGetRun, id, err)
	}
	var snap signals.Snapshot
	if err := v.Get(&snap); err != nil {
		return signals.Snapshot{}, fmt.Errorf("decode %s of run %s: %w", signals.QueryGetRun, id, err)
	}
	return snap, nil
}

// lookupErr maps a Temporal lookup error of the run id: ErrNotFound for
// a missing run.
func lookupErr(id string, err error) error {
	if missing(err) {
		return ErrNotFound
	}
	return fmt.Errorf("describe run %s: %w", id, err)
}

// missing reports a Temporal error that means no such workflow (or an id
// Temporal refuses, which no run has).
func missing(err error) bool {
	var nf *serviceerror.NotFound
	var inv *serviceerror.InvalidArgument
	return errors.As(err, &nf) || errors.As(err, &inv)
}
