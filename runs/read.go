package runs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry"
)

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
// unserved (Service.workers), and while it is, reads of its runs skip the
// query and answer from the describe call at once. A run whose queue is not
// known yet is described first while any queue is unserved.
//
// What Service.known remembers saves the round trips that would carry no
// information: a run known to be closed skips the query (its close event
// is read at once), a run known to be plain skips it too (it is described
// at once).
//
// The tenant segment of id has been checked by the caller; a run whose
// recorded owner is another tenant (or that no service started) reads
// ErrNotFound, like a missing run.
func (s *Service) read(ctx context.Context, id, tenant string) (reading, error) {
	return s.readRun(ctx, id, tenant, s.opts.QueryPatience)
}

// readAfterSignal is read for a caller that must see the effect of a
// signal it sent: what a run published lags its getRun answer (it holds no
// resolutions), so the query waits as long as ctx allows, and is asked
// even while the run's task queue is marked unserved.
func (s *Service) readAfterSignal(ctx context.Context, id, tenant string) (reading, error) {
	return s.readRun(ctx, id, tenant, -1)
}

// readRun is read with the given query patience (negative: no bound and
// no shortcut for unserved task queues).
func (s *Service) readRun(ctx context.Context, id, tenant string, patience time.Duration) (reading, error) {
	entry, _ := s.known.entry(id)
	facts := entry.facts
	if facts&factClosed != 0 {
		return s.readClosed(ctx, id, tenant)
	}
	var (
		noAnswer bool      // the query got no answer in time
		sent     time.Time // when it was sent
		// askLater: the run is described first (its queue is unknown
		// while some queue is unserved) and queried when its queue is
		// served.
		askLater bool
	)
	if facts&factPlain == 0 {
		switch {
		case patience >= 0 && s.workers.unserved(ctx, entry.queue):
		case patience >= 0 && entry.queue == "" && s.workers.anyDown():
			askLater = true
		default:
			sent = time.Now()
			r, answered, late, err := s.queryRun(ctx, id, tenant, patience)
			if answered || err != nil {
				return r, err
			}
			noAnswer = late
		}
	}
	desc, err := s.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return reading{}, s.lookupErr(id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	running := info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	queue := info.GetTaskQueue()
	if noAnswer && running {
		s.workers.noAnswer(ctx, queue, sent)
	}
	r := reading{plain: s.plain(info)}
	if askLater && running && !r.plain && !s.workers.unserved(ctx, queue) {
		if !s.ownedBy(info, tenant) {
			return reading{}, ErrNotFound
		}
		sent = time.Now()
		qr, answered, late, err := s.queryRun(ctx, id, tenant, patience)
		if answered || err != nil {
			if err == nil {
				s.known.setQueue(id, queue)
			}
			return qr, err
		}
		if late {
			s.workers.noAnswer(ctx, queue, sent)
		}
	}
	r.snap, r.events, _, err = s.fromDescribe(ctx, id, tenant, info, false)
	r.described = running
	if err == nil {
		f := r.facts()
		if !running {
			f |= factClosed
		}
		s.known.add(id, f)
		s.noteDescribed(id, info)
	}
	return r, err
}

// queryRun asks a run its getRun query, waiting at most patience (no
// bound but ctx when it is not positive). It reports answered when the
// query settled the read (an answer, a closed run, a missing run); with
// answered false and a nil error the caller describes the run instead,
// and late tells that the query got no answer in time (rather than
// failing).
func (s *Service) queryRun(ctx context.Context, id, tenant string, patience time.Duration) (r reading, answered, late bool, err error) {
	qctx := ctx
	if patience > 0 {
		var cancel context.CancelFunc
		qctx, cancel = context.WithTimeout(ctx, patience)
		defer cancel()
	}
	resp, err := s.client.QueryWorkflowWithOptions(qctx, &client.QueryWorkflowWithOptionsRequest{
		WorkflowID:           id,
		QueryType:            signals.QueryGetRun,
		QueryRejectCondition: enumspb.QUERY_REJECT_CONDITION_NOT_OPEN,
	})
	switch {
	case err == nil && resp.QueryRejected != nil:
		r, err := s.readClosed(ctx, id, tenant)
		if err == nil {
			s.known.add(id, r.facts()|factClosed)
		}
		return r, true, false, err
	case err == nil:
		var snap signals.Snapshot
		if err := resp.QueryResult.Get(&snap); err != nil {
			return reading{}, true, false, fmt.Errorf("decode %s of run %s: %w", signals.QueryGetRun, id, err)
		}
		if snap.Owner.Tenant != tenant {
			return reading{}, true, false, ErrNotFound
		}
		s.known.note(id, snap.Tool, false, "")
		return reading{snap: snap}, true, false, nil
	case missing(err):
		return reading{}, true, false, ErrNotFound
	case ctx.Err() != nil:
		return reading{}, true, false, fmt.Errorf("get run %s: %w", id, ctx.Err())
	}
	late = qctx.Err() != nil || serviceerror.ToStatus(err).Code() == codes.DeadlineExceeded
	s.log.Debug("getRun query failed; describing the run", s.fields(ctx, id, zap.Bool("late", late), zap.Error(err))...)
	return reading{}, false, late, nil
}

// facts is what r tells about the run for Service.known.
func (r reading) facts() runFacts {
	if r.plain {
		return factPlain
	}
	return 0
}

// readClosed reads a closed run (found closed by the getRun query, or
// known to be): its close event, and a describe call when that holds no
// RunRecord.
func (s *Service) readClosed(ctx context.Context, id, tenant string) (reading, error) {
	last, err := s.closeEvent(ctx, id, "")
	if err != nil {
		return reading{}, err
	}
	if rec, ok := s.decodeClose(last); ok {
		if rec.Snapshot.Owner.Tenant != tenant {
			return reading{}, ErrNotFound
		}
		return reading{snap: rec.Snapshot, events: rec.Events}, nil
	}
	// No RunRecord: what Temporal knows (search attributes, memo, status)
	// comes from a describe call.
	info, err := s.describe(ctx, id, tenant)
	if err != nil {
		return reading{}, err
	}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		// Cannot happen for a run id (its workflow ID is never reused),
		// but a running run's close event is no answer.
		return reading{}, fmt.Errorf("read run %s: closed, then running", id)
	}
	rec := s.closedOutside(info, last)
	return reading{snap: rec.Snapshot, events: rec.Events, plain: s.plain(info)}, nil
}

// missing reports a Temporal error that means no such workflow (or an id
// Temporal refuses, which no run has).
func missing(err error) bool {
	var nf *serviceerror.NotFound
	var inv *serviceerror.InvalidArgument
	return errors.As(err, &nf) || errors.As(err, &inv)
}

// runsRemembered bounds Service.known.
const runsRemembered = 16384

// runFacts are facts about a run that never change once true.
type runFacts uint8

const (
	// factPlain: the run's tool follows signals.ContractPlain.
	factPlain runFacts = 1 << iota
	// factClosed: the run has closed (its workflow ID is never reused,
	// so it stays closed).
	factClosed
	// factTraced: the memo entry's trace is the run's
	// signals.MemoTraceParent ("" when it has none).
	factTraced
)

// memoEntry is what runMemo remembers of a run.
type memoEntry struct {
	facts runFacts
	tool  string // "" until known
	trace string // valid with factTraced
	// queue is the run's task queue once a describe call told it ("":
	// unknown); the string is shared with the describe response's.
	queue string
}

// runMemo remembers the runs this process started or read lately: that
// they are runs of this service (of the tenant their id names), the facts
// about them that never change once true (runFacts), their tool and the
// trace they started in, so it needs no invalidation. It forgets the
// oldest entries first; a forgotten run costs one more round trip where
// the memo is consulted. An entry is under a couple of hundred bytes:
// the bound keeps the memo under a few MB.
type runMemo struct {
	mu      sync.Mutex
	entries map[string]memoEntry
	ring    []string
	next    int
}

func newRunMemo(size int) *runMemo {
	return &runMemo{entries: make(map[string]memoEntry, size), ring: make([]string, size)}
}

// add records that id is a run of this service with facts f (added to
// what is known already).
func (m *runMemo) add(id string, f runFacts) {
	m.update(id, func(e *memoEntry) { e.facts |= f })
}

// note records the run's tool (when not "") and, with traced, the trace
// it started in.
func (m *runMemo) note(id, tool string, traced bool, trace string) {
	m.update(id, func(e *memoEntry) {
		if tool != "" {
			e.tool = tool
		}
		if traced {
			e.facts |= factTraced
			e.trace = trace
		}
	})
}

func (m *runMemo) update(id string, change func(*memoEntry)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[id]
	if !ok {
		if old := m.ring[m.next]; old != "" {
			delete(m.entries, old)
		}
		m.ring[m.next] = id
		m.next = (m.next + 1) % len(m.ring)
	}
	change(&e)
	m.entries[id] = e
}

// get returns what is known about id, and whether it is remembered.
func (m *runMemo) get(id string) (runFacts, bool) {
	e, ok := m.entry(id)
	return e.facts, ok
}

// entry returns the memo entry of id.
func (m *runMemo) entry(id string) (memoEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[id]
	return e, ok
}

// setQueue records the task queue of the run id (a run of this service).
func (m *runMemo) setQueue(id, queue string) {
	m.update(id, func(e *memoEntry) { e.queue = queue })
}

// noteDescribed remembers the tool, the task queue and the start trace a
// describe call found.
func (s *Service) noteDescribed(id string, info *workflowpb.WorkflowExecutionInfo) {
	tool, _ := s.keyword(info.GetSearchAttributes(), signals.SearchAttrTool)
	var trace string
	if p, ok := info.GetMemo().GetFields()[signals.MemoTraceParent]; ok {
		_ = s.dc.FromPayload(p, &trace)
	}
	s.known.note(id, tool, true, trace)
	s.known.setQueue(id, info.GetTaskQueue())
}

// fields are the log fields of a line about the run id (telemetry.RunFields,
// with the tool when the memo knows it), then extra.
func (s *Service) fields(ctx context.Context, id string, extra ...zap.Field) []zap.Field {
	e, _ := s.known.entry(id)
	return append(telemetry.RunFields(ctx, id, e.tool), extra...)
}

// StartTrace returns the span context of the request that started the
// run (signals.MemoTraceParent; invalid when it was not traced). It reads
// the run's memo with a describe call unless this process started or
// described the run lately.
func (s *Service) StartTrace(ctx context.Context, caller signals.Subject, runID string) (trace.SpanContext, error) {
	if err := authorize(caller, runID); err != nil {
		return trace.SpanContext{}, err
	}
	if e, ok := s.known.entry(runID); ok && e.facts&factTraced != 0 {
		return telemetry.ParseTraceParent(e.trace), nil
	}
	info, err := s.describe(ctx, runID, caller.Tenant)
	if err != nil {
		return trace.SpanContext{}, err
	}
	s.noteDescribed(runID, info)
	e, _ := s.known.entry(runID)
	return telemetry.ParseTraceParent(e.trace), nil
}
