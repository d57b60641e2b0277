package runs

import (
	"context"
	"sync"
	"time"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry"
)

// runsRemembered bounds reader.known.
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
	// target is what serves the run: its task queue once known (from its
	// start, or a describe call; "": unknown) and, once a describe call
	// told it, the version it is pinned to.
	target target
	// described reports a target a describe call told (its version is
	// known); a run's start tells only its queue.
	described bool
	// started is the snapshot Start answered for a plain run this process
	// started, until the run's first Await takes it (nil: none).
	started *signals.Snapshot
	// timeout is the run timeout of the tool of a run this process
	// started (0: none, or not started here).
	timeout signals.Duration
	// cancelAt and cancelReason are what the run's cancellation request
	// tells, once read (zero: not read).
	cancelAt     time.Time
	cancelReason string
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

// entry returns the memo entry of id.
func (m *runMemo) entry(id string) (memoEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[id]
	return e, ok
}

// takeStarted returns, once, the snapshot Start answered for the run id,
// and whether the run is plain.
func (m *runMemo) takeStarted(id string) (signals.Snapshot, bool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[id]
	if !ok || e.started == nil || e.facts&factClosed != 0 {
		return signals.Snapshot{}, false, false
	}
	snap := *e.started
	e.started = nil
	m.entries[id] = e
	return snap, e.facts&factPlain != 0, true
}

// setTarget records what serves the run id (a run of this service), as a
// describe call told it.
func (m *runMemo) setTarget(id string, t target) {
	m.update(id, func(e *memoEntry) { e.target, e.described = t, true })
}

// noteDescribed remembers the tool, what serves the run (servedBy) and the
// start trace a describe call found.
func (rd *reader) noteDescribed(id string, info *workflowpb.WorkflowExecutionInfo) {
	tool, _ := rd.keyword(info.GetSearchAttributes(), signals.SearchAttrTool)
	var trace string
	if p, ok := info.GetMemo().GetFields()[signals.MemoTraceParent]; ok {
		_ = rd.dc.FromPayload(p, &trace)
	}
	rd.known.note(id, tool, true, trace)
	rd.known.setTarget(id, servedBy(info))
}

// fields are the log fields of a line about the run id (telemetry.RunFields,
// with the tool when the memo knows it), then extra.
func (m *runMemo) fields(ctx context.Context, id string, extra ...zap.Field) []zap.Field {
	e, _ := m.entry(id)
	return append(telemetry.RunFields(ctx, id, e.tool), extra...)
}
