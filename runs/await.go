package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openwop/temporal-mcp/signals"
)

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

// await is Await for a run id of tenant already authorized (Events waits
// with it too).
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

// loadDescribed reads the run by describing it first. It returns the
// snapshot, the event log when the run is closed (nil otherwise), and the
// history length the describe call saw, which Await follows the history
// from. Get, Resolve and Cancel use read, which costs one round trip less.
func (s *Service) loadDescribed(ctx context.Context, id, tenant string) (signals.Snapshot, []signals.Event, int64, error) {
	desc, err := s.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return signals.Snapshot{}, nil, 0, lookupErr(id, err)
	}
	return s.fromDescribe(ctx, id, tenant, desc.GetWorkflowExecutionInfo(), true)
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

// isCloseEvent reports whether an event of type t closes the run.
func isCloseEvent(t enumspb.EventType) bool {
	switch t {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return true
	}
	return false
}
