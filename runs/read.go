package runs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
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
//     described and summarised from what Temporal knows, as before.
//
// Runs known to be plain (Service.known) skip the query. The tenant segment of id has been
// checked by the caller; a run whose recorded owner is another tenant (or
// that no service started) reads ErrNotFound, like a missing run.
func (s *Service) read(ctx context.Context, id, tenant string) (reading, error) {
	if known, plain := s.known.get(id); !known || !plain {
		resp, err := s.client.QueryWorkflowWithOptions(ctx, &client.QueryWorkflowWithOptionsRequest{
			WorkflowID:           id,
			QueryType:            signals.QueryGetRun,
			QueryRejectCondition: enumspb.QUERY_REJECT_CONDITION_NOT_OPEN,
		})
		switch {
		case err == nil && resp.QueryRejected != nil:
			return s.readClosed(ctx, id, tenant)
		case err == nil:
			var snap signals.Snapshot
			if err := resp.QueryResult.Get(&snap); err != nil {
				return reading{}, fmt.Errorf("decode %s of run %s: %w", signals.QueryGetRun, id, err)
			}
			if snap.Owner.Tenant != tenant {
				return reading{}, ErrNotFound
			}
			s.known.add(id, false)
			return reading{snap: snap}, nil
		case missing(err):
			return reading{}, ErrNotFound
		case ctx.Err() != nil:
			return reading{}, fmt.Errorf("get run %s: %w", id, ctx.Err())
		}
		s.log.Debug("getRun query failed; describing the run", zap.String("runId", id), zap.Error(err))
	}
	desc, err := s.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return reading{}, s.lookupErr(id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	r := reading{plain: s.plain(info)}
	r.snap, r.events, _, err = s.fromDescribe(ctx, id, tenant, info, false)
	if err == nil && r.plain {
		s.known.add(id, true)
	}
	return r, err
}

// readClosed reads a run the getRun query found closed.
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
	desc, err := s.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return reading{}, s.lookupErr(id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if t, ok := s.keyword(info.GetSearchAttributes(), signals.SearchAttrTenant); !ok || t != tenant {
		return reading{}, ErrNotFound
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

// runMemo remembers, for the runs this process started or read lately,
// that they are runs of this service and whether their tool follows
// signals.ContractPlain. These facts never change for a run id, so the
// memo needs no invalidation; it forgets the oldest entries first, and a
// forgotten run costs one more round trip (a describe call) where it is
// consulted. An entry is a few dozen bytes: the bound keeps it under 2 MB.
type runMemo struct {
	mu    sync.Mutex
	plain map[string]bool
	ring  []string
	next  int
}

func newRunMemo(size int) *runMemo {
	return &runMemo{plain: make(map[string]bool, size), ring: make([]string, size)}
}

// add records that id is a run of this service (of the tenant its id
// names), plain or not.
func (m *runMemo) add(id string, plain bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.plain[id]; ok {
		m.plain[id] = plain
		return
	}
	if old := m.ring[m.next]; old != "" {
		delete(m.plain, old)
	}
	m.ring[m.next] = id
	m.plain[id] = plain
	m.next = (m.next + 1) % len(m.ring)
}

// get reports whether id is remembered, and whether it is plain.
func (m *runMemo) get(id string) (known, plain bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	plain, known = m.plain[id]
	return known, plain
}
