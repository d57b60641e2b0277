package runs

import (
	"context"
	"encoding/json"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
)

// cancelPageSize is the page size of the reverse history read that finds a
// run's cancellation request: it is among the last events of a run that
// did not close upon it.
const cancelPageSize = 64

// markCancelRequested makes snap, a running run summarised from the
// describe call desc, read cancelling when Temporal holds a cancellation
// request for it: a run is cancelling from the request until it closes,
// whatever its code does with it (a plain workflow has no cancelling status
// of its own; a run of the run contract may not have handled the request
// yet, or never honour it). What the request tells (when, why) is read
// from the run's history once and remembered.
func (rd *reader) markCancelRequested(ctx context.Context, id string, desc *workflowservice.DescribeWorkflowExecutionResponse, snap *signals.Snapshot) {
	if !desc.GetWorkflowExtendedInfo().GetCancelRequested() || snap.Status.Terminal() {
		return
	}
	if snap.Status != signals.StatusCancelling {
		snap.Status, snap.StatusMessage = signals.StatusCancelling, signals.StatusCancelling.Message()
	}
	if !snap.CancelRequestedAt.IsZero() && snap.CancelReason != "" {
		return
	}
	at, reason := rd.cancelRequest(ctx, id)
	if snap.CancelRequestedAt.IsZero() {
		snap.CancelRequestedAt = at
	}
	if snap.CancelReason == "" {
		snap.CancelReason = reason
	}
}

// cancelRequest returns when the cancellation of the open run id was
// requested and its reason (the CancelRequest that Cancel sends as the
// request's cause; caller-requested for another), from the last
// WorkflowExecutionCancelRequested event of its history, which reader.known
// remembers. It returns zero values when the history cannot be read.
func (rd *reader) cancelRequest(ctx context.Context, id string) (time.Time, string) {
	if e, ok := rd.known.entry(id); ok && !e.cancelAt.IsZero() {
		return e.cancelAt, e.cancelReason
	}
	req := &workflowservice.GetWorkflowExecutionHistoryReverseRequest{
		Namespace:       rd.opts.Namespace,
		Execution:       &commonpb.WorkflowExecution{WorkflowId: id},
		MaximumPageSize: cancelPageSize,
	}
	for {
		resp, err := rd.client.WorkflowService().GetWorkflowExecutionHistoryReverse(ctx, req)
		if err != nil {
			rd.log.Debug("the cancellation request of the run is not read", rd.known.fields(ctx, id, zap.Error(err))...)
			return time.Time{}, ""
		}
		for _, ev := range resp.GetHistory().GetEvents() {
			if ev.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED {
				continue
			}
			at, reason := ev.GetEventTime().AsTime(), signals.ReasonCallerRequested
			var cr signals.CancelRequest
			if json.Unmarshal([]byte(ev.GetWorkflowExecutionCancelRequestedEventAttributes().GetCause()), &cr) == nil && cr.Reason != "" {
				reason = cr.Reason
			}
			rd.known.update(id, func(e *memoEntry) { e.cancelAt, e.cancelReason = at, reason })
			return at, reason
		}
		if len(resp.GetNextPageToken()) == 0 {
			return time.Time{}, ""
		}
		req.NextPageToken = resp.GetNextPageToken()
	}
}
