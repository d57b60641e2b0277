package core

import (
	"sync"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// Bounds of a derived poll interval (Pacer).
const (
	// MinPollInterval is the shortest poll interval a task is given.
	MinPollInterval = 100 * time.Millisecond
	// MaxPollInterval is the longest poll interval a working task is
	// given (a task waiting for its input gets waitingPollFactor times
	// its interval).
	MaxPollInterval = 15 * time.Second
	// pollsPerRun is how many polls a run of typical length is given: a
	// client learns of the end at most a tenth of the run later.
	pollsPerRun = 10
	// waitingPollFactor is how many times its working interval a task
	// that waits for its input (a human's answer) is polled less often.
	waitingPollFactor = 4
	// paceWeight is the weight of the newest run in a tool's typical
	// duration (an exponentially weighted mean).
	paceWeight = 0.25
	// paceTools and paceRuns bound what a Pacer remembers.
	paceTools = 4096
	paceRuns  = 4096
)

// Pacer chooses the poll interval of a task from how long its tool's
// runs take: a tenth of the typical duration of the tool's recent runs,
// within MinPollInterval and MaxPollInterval, so that a fast tool's client
// polls soon and a slow tool's client rarely; a tool whose runs this
// process never saw end gets the configured default. A task that waits for
// its input is polled waitingPollFactor times less often. The typical
// duration is the weighted mean of the runs that ended without a human's
// answer (a run that waited for one took as long as its human did), as
// this process saw them end: in a call, in tasks/get, in a listen. It is
// safe for concurrent use.
type Pacer struct {
	def time.Duration

	mu    sync.Mutex
	typ   map[string]time.Duration // by tool
	seen  map[string]bool          // run ids observed ended
	order []string                 // of seen, oldest first
}

// NewPacer returns a Pacer whose default interval is def.
func NewPacer(def time.Duration) *Pacer {
	return &Pacer{def: def, typ: map[string]time.Duration{}, seen: map[string]bool{}}
}

// Observe notes how long snap's run took, once per run, when it ended
// without a human's answer.
func (p *Pacer) Observe(snap signals.Snapshot) {
	if p == nil || !snap.Status.Terminal() || len(snap.Resolved) > 0 || len(snap.Withdrawn) > 0 || snap.Tool == "" ||
		snap.CreatedAt.IsZero() || snap.UpdatedAt.Before(snap.CreatedAt) {
		return
	}
	took := snap.UpdatedAt.Sub(snap.CreatedAt)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[snap.RunID] {
		return
	}
	p.seen[snap.RunID] = true
	p.order = append(p.order, snap.RunID)
	if len(p.order) > paceRuns {
		delete(p.seen, p.order[0])
		p.order = p.order[1:]
	}
	old, ok := p.typ[snap.Tool]
	switch {
	case ok:
		took = time.Duration(paceWeight*float64(took) + (1-paceWeight)*float64(old))
	case len(p.typ) >= paceTools:
		return
	}
	p.typ[snap.Tool] = took
}

// Interval is the poll interval of a task of tool; waiting: the task
// waits for its input.
func (p *Pacer) Interval(tool string, waiting bool) time.Duration {
	d := p.def
	p.mu.Lock()
	typ, ok := p.typ[tool]
	p.mu.Unlock()
	if ok {
		d = min(max(typ/pollsPerRun, MinPollInterval), MaxPollInterval)
	}
	if waiting {
		return waitingPollFactor * d
	}
	return d
}
