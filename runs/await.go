package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openwop/temporal-mcp/signals"
)

// Await blocks until done(snapshot) holds or the run is terminal, and
// returns that snapshot. It follows the run's history with a long poll and
// asks getRun again only when a workflow task completed, so a waiting call
// costs no polling; a plain run, which cannot answer getRun, is followed by
// a long poll of its close event alone. It returns ctx's error when ctx
// ends first. With PublishedOnly, getRun is asked only after a workflow
// task that changed what the run publishes, and the callers waiting so on
// one run share one follower (watch.go).
func (s *Service) Await(ctx context.Context, caller signals.Subject, runID string, done func(signals.Snapshot) bool, opts ...AwaitOption) (signals.Snapshot, error) {
	if err := authorize(caller, runID); err != nil {
		return signals.Snapshot{}, err
	}
	if publishedOnly(opts) {
		return s.rd.awaitShared(ctx, runID, caller.Tenant, done)
	}
	return s.rd.await(ctx, runID, caller.Tenant, followEveryTask, done)
}

// followMode says when following a run asks getRun.
type followMode uint8

const (
	// followEveryTask asks after every completed workflow task.
	followEveryTask followMode = iota
	// followPublished asks after a workflow task that changed what the
	// run publishes.
	followPublished
)

// await is Await for a run id of tenant already authorized (Events waits
// with it too).
func (rd *reader) await(ctx context.Context, id, tenant string, mode followMode, done func(signals.Snapshot) bool) (signals.Snapshot, error) {
	at, err := rd.followFrom(ctx, id, tenant)
	if err != nil {
		return signals.Snapshot{}, err
	}
	// A history long poll can fail for reasons that are not the run's (the
	// run's history branch moved on, a frontend restart): reload the run and
	// follow its history again, a few times in a row at most.
	const maxRestarts = 5
	for restarts := 0; ; restarts++ {
		if done(at.snap) || at.snap.Status.Terminal() {
			// What Get holds of the run may be older than what the caller
			// is about to see (a blocking call's result, then tasks/get):
			// the next read is Temporal's.
			rd.reads.drop(id)
			return at.snap, nil
		}
		var followErr error
		if at.plain {
			at.snap, followErr = rd.awaitClose(ctx, id, tenant, at.snap)
		} else {
			at.snap, _, followErr = rd.follow(ctx, id, tenant, at, mode, done)
		}
		switch {
		case followErr == nil:
			// The top of the loop shows done the snapshot the follow
			// ended at (a shared follower learns a run's end from it) and
			// tells whether to follow on.
			continue
		case ctx.Err() != nil:
			return at.snap, ctx.Err()
		case errors.Is(followErr, context.DeadlineExceeded):
			return at.snap, followErr
		case errors.Is(followErr, errHistory) && restarts < maxRestarts:
			rd.log.Debug("history long poll failed; following the run again", rd.known.fields(ctx, id, zap.Error(followErr))...)
			if at, err = rd.loadDescribed(ctx, id, tenant); err != nil {
				return at.snap, err
			}
		default:
			return at.snap, followErr
		}
	}
}

// position is where following a run starts: its snapshot, the history
// length it reflects (events up to seen are known), and whether the run is
// plain.
type position struct {
	snap  signals.Snapshot
	seen  int64
	plain bool
}

// followFrom is where await starts. The first Await of a plain run this
// process just started starts from the snapshot Start answered, without a
// call (it waits for the close event alone); any other from a describe call
// (loadDescribed).
func (rd *reader) followFrom(ctx context.Context, id, tenant string) (position, error) {
	if started, plain, ok := rd.known.takeStarted(id); ok && plain {
		// An openwop run is followed from what a describe call saw.
		return position{snap: started, plain: plain}, nil
	}
	return rd.loadDescribed(ctx, id, tenant)
}

// loadDescribed reads the run by describing it first: its snapshot and the
// history length the describe call saw, which Await follows the history
// from. Get, Resolve and Cancel use read, which costs one round trip less.
func (rd *reader) loadDescribed(ctx context.Context, id, tenant string) (position, error) {
	desc, err := rd.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return position{}, lookupErr(id, err)
	}
	snap, _, seen, err := rd.fromDescribe(ctx, id, tenant, desc, true)
	return position{snap: snap, seen: seen, plain: rd.plain(desc.GetWorkflowExecutionInfo())}, err
}

// longPollContext is the context of a history long poll made for ctx: it
// ends when ctx ends, but carries no deadline to the server. Temporal's
// frontend answers a long poll whose deadline is less than its tail room
// (about a second) away at once, with no event, and the SDK's history
// iterator then asks again at once: within the last second of a deadline
// (the whole of a short inline wait) a follow would call Temporal a few
// thousand times a second. Without a deadline the server holds each poll
// for its own interval, and the poll is cancelled when ctx ends. stop
// releases it.
func longPollContext(ctx context.Context) (context.Context, func()) {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(ctx, cancel)
	return lctx, func() {
		unhook()
		cancel()
	}
}

// errHistory marks a failure of the history long poll itself.
var errHistory = errors.New("follow history")

// follow reads the run's history by long poll from the start and reloads
// the snapshot after the workflow tasks mode names (events up to at.seen
// are known already), until done holds or the run closes.
func (rd *reader) follow(ctx context.Context, id, tenant string, at position, mode followMode, done func(signals.Snapshot) bool) (signals.Snapshot, int64, error) {
	snap, seen := at.snap, at.seen
	lctx, stop := longPollContext(ctx)
	defer stop()
	it := rd.client.GetWorkflowHistory(lctx, id, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	// task is the last completed workflow task; asked, the last one getRun
	// was asked after.
	var task, asked int64
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return snap, seen, historyErr(ctx, id, err)
		}
		if ev.GetEventId() <= seen {
			continue
		}
		switch t := ev.GetEventType(); {
		case t == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			task = ev.GetEventId()
			if mode == followPublished {
				continue
			}
			fallthrough
		case mode == followPublished && publishes(t) && asked != task:
			asked = task
			// Still running (the run was authorized by the first load):
			// the getRun query alone tells the new state.
			if next, err := rd.query(ctx, id); err == nil {
				snap, seen = next, ev.GetEventId()
			} else if at, err = rd.loadDescribed(ctx, id, tenant); err != nil {
				return at.snap, at.seen, err
			} else {
				snap, seen = at.snap, at.seen
			}
		case isCloseEvent(t):
			if at, err = rd.loadDescribed(ctx, id, tenant); err != nil {
				return at.snap, at.seen, err
			}
			snap, seen = at.snap, at.seen
		default:
			continue
		}
		// A newer state than Get may hold: its next read is Temporal's.
		rd.reads.drop(id)
		if done(snap) || snap.Status.Terminal() {
			return snap, seen, nil
		}
	}
	if ctx.Err() != nil {
		return snap, seen, ctx.Err()
	}
	// The history ended (the run closed): read the final state.
	at, err := rd.loadDescribed(ctx, id, tenant)
	return at.snap, at.seen, err
}

// publishes reports whether an event of type t changes what a run
// publishes: its status search attribute or its memo.
func publishes(t enumspb.EventType) bool {
	return t == enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES || t == enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED
}

// awaitClose waits for a plain run's close event (one long poll, as the
// raw SDK's Get does) and returns the run's final snapshot: held, the run's
// snapshot while it ran, with what the close event tells.
func (rd *reader) awaitClose(ctx context.Context, id, tenant string, held signals.Snapshot) (signals.Snapshot, error) {
	lctx, stop := longPollContext(ctx)
	defer stop()
	it := rd.client.GetWorkflowHistory(lctx, id, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	var last *historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return held, historyErr(ctx, id, err)
		}
		last = ev
	}
	if ctx.Err() != nil {
		return held, ctx.Err()
	}
	if rec, ok := rd.decodeClose(last); ok {
		if rec.Snapshot.Owner.Tenant != tenant {
			return signals.Snapshot{}, ErrNotFound
		}
		return rec.Snapshot, nil
	}
	if last == nil || last.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
		// Not a close the run's snapshot can tell: read the run again.
		at, err := rd.loadDescribed(ctx, id, tenant)
		return at.snap, err
	}
	rd.known.add(id, factClosed)
	e, _ := rd.known.entry(id)
	return rd.closeSnapshot(held, last, e.timeout).Snapshot, nil
}

// historyErr classifies a failed history long poll: ctx's error when ctx
// ended, context.DeadlineExceeded when the server ended it at ctx's
// deadline, otherwise errHistory.
func historyErr(ctx context.Context, id string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if endedAtDeadline(ctx, err) {
		// The server ended the long poll at the caller's deadline a moment
		// before ctx expired.
		return context.DeadlineExceeded
	}
	return fmt.Errorf("%w of run %s: %w", errHistory, id, err)
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
