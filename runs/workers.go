package runs

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/liveness"
)

// Defaults of the worker watch.
const (
	// DefaultQueryPatience is how long a read waits for the getRun query
	// before it answers from what the run published (Options.QueryPatience).
	DefaultQueryPatience = 700 * time.Millisecond
	// slowQueryPatience is how much longer a read waits for a getRun
	// query that got no answer within the patience while a worker still
	// polls the run's task queue (a slow run, not an unserved one).
	slowQueryPatience = 10 * time.Second
	// pollerRecheck is how long one reading of a task queue's pollers
	// answers whether a queue marked unserved is served again.
	pollerRecheck = time.Second
	// quietPolls is how long no worker must have polled a task queue, on
	// top of a getRun query that got no answer, for the queue to be
	// marked unserved: a worker that is only slow (short of CPU, or busy
	// with long workflow tasks) still polls now and then.
	quietPolls = 5 * time.Second
	// describeTimeout bounds one DescribeTaskQueue call of the watch.
	describeTimeout = 2 * time.Second
	// maxWatched bounds the task queues the watch remembers.
	maxWatched = 1024
)

// workers watches whether a worker serves each task queue that runs live
// on, so that reads skip the getRun query while none does: a query no
// worker answers waits until its deadline. It costs nothing while every
// queue is served (one map lookup per read).
//
// A queue is marked unserved when a getRun query of one of its runs got no
// answer within the read's patience and no worker has polled the queue for
// quietPolls, or when no worker has polled it for liveness.Window (90 s,
// the window the catalog judges a worker by). Until the mark, each read of
// a run there waits the patience, then describes it. It is served again
// once Temporal reports a poll newer than the last one it reported when
// the mark was set: a worker (re)started polling. Temporal does not
// forget a killed worker's pollers at once (their last access stays listed
// for minutes), which is why a fresh poll, not the list of pollers,
// decides.
//
// Each outage is logged once at WARN when it is noticed, and at INFO when
// it ends.
type workers struct {
	c   client.Client
	log *zap.Logger
	now func() time.Time

	mu     sync.Mutex
	queues map[string]*queueState
	// down counts the queues marked unserved; read without mu on every
	// read of a run whose queue is not known.
	down atomic.Int32
}

// queueState is what the watch knows about one task queue.
type queueState struct {
	// downSince is when the queue was marked unserved (zero: served).
	downSince time.Time
	// baseline is the newest poll Temporal reported when the mark was set.
	baseline time.Time
	// checked is when the pollers were last read; checking is set while a
	// reader reads them.
	checked  time.Time
	checking bool
	// newest is the newest poll of the last reading (zero: none).
	newest time.Time
	// answered is when a getRun query of a run there was last answered.
	answered time.Time
}

func newWorkers(c client.Client, log *zap.Logger) *workers {
	return &workers{c: c, log: log, now: time.Now, queues: map[string]*queueState{}}
}

// anyDown reports whether some queue is marked unserved.
func (w *workers) anyDown() bool {
	return w.down.Load() > 0
}

// state returns the queue's state, remembering the queue when there is
// room (or when add is set).
func (w *workers) state(queue string, add bool) *queueState {
	st := w.queues[queue]
	if st == nil && (add || len(w.queues) < maxWatched) {
		st = &queueState{}
		w.queues[queue] = st
	}
	return st
}

// unserved reports whether queue is marked unserved. While it is, it
// reads the queue's pollers at most once per pollerRecheck to learn
// whether a worker polls again.
func (w *workers) unserved(ctx context.Context, queue string) bool {
	if queue == "" {
		return false
	}
	w.mu.Lock()
	st := w.queues[queue]
	if st == nil || st.downSince.IsZero() {
		w.mu.Unlock()
		return false
	}
	if st.checking || w.now().Sub(st.checked) < pollerRecheck {
		w.mu.Unlock()
		return true
	}
	newest, err := w.recheck(ctx, queue, st)
	defer w.mu.Unlock()
	if err != nil {
		w.log.Debug("read the pollers of a task queue marked unserved", zap.String("taskQueue", queue), zap.Error(err))
		return true
	}
	if !newest.After(st.baseline) {
		return true
	}
	w.servedLocked(queue, st, "a worker polls the task queue again")
	return false
}

// servedLocked ends the outage of queue, marked unserved, for the reason
// why.
func (w *workers) servedLocked(queue string, st *queueState, why string) {
	w.log.Info(why+"; runs are read from their workers",
		zap.String("taskQueue", queue), zap.Duration("outage", w.now().Sub(st.downSince)))
	st.downSince, st.baseline = time.Time{}, time.Time{}
	w.down.Add(-1)
}

// answered records that a worker answered a getRun query of a run on
// queue: the queue is served, even when Temporal lists no recent poll of
// it (a worker busy with a backlog on its sticky queue polls only that
// one, which DescribeTaskQueue does not show).
func (w *workers) answered(queue string) {
	if queue == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.state(queue, false)
	if st == nil {
		return
	}
	st.answered = w.now()
	if !st.downSince.IsZero() {
		w.servedLocked(queue, st, "a worker answered a getRun query")
	}
}

// late records that a getRun query of a run on queue, sent at sent, got
// no answer within the read's patience, and reports whether a worker
// still serves the queue: one answered a getRun query there (answered) or
// polled the queue since sent. The run is then only slow (its worker short
// of CPU, Temporal loaded), and the reader waits for the query it sent
// rather than adding a describe call to the load. Otherwise the reader
// describes the run; and when no worker has polled the queue or answered
// there for quietPolls either, the queue is marked unserved. The pollers
// are read at most once per pollerRecheck; meanwhile the last reading
// answers. That compares Temporal's clock with this process's: a skew of
// more than a few seconds can take a slow worker for a missing one (until
// its next poll) or delay the mark (until a later query that gets no
// answer).
func (w *workers) late(ctx context.Context, queue string, sent time.Time) bool {
	if queue == "" {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.state(queue, true)
	if !st.downSince.IsZero() {
		return false
	}
	if st.answered.After(sent) {
		return true
	}
	newest, checked := st.newest, false
	if !st.checking && w.now().Sub(st.checked) >= pollerRecheck {
		var err error
		if newest, err = w.recheck(ctx, queue, st); err != nil {
			w.log.Debug("read the pollers of a task queue whose run did not answer", zap.String("taskQueue", queue), zap.Error(err))
			return false
		}
		checked = true
	}
	recent := func(t time.Time) bool { return !t.IsZero() && w.now().Sub(t) < quietPolls }
	switch {
	case !st.downSince.IsZero():
		// Marked while the pollers were read.
		return false
	case newest.After(sent) || st.answered.After(sent):
		return true
	case !checked || recent(newest) || recent(st.answered):
		w.log.Debug("a getRun query got no answer in time, but a worker served the task queue lately", zap.String("taskQueue", queue))
		return false
	}
	w.markLocked(queue, st, newest, fmt.Sprintf("a getRun query got no answer and no worker has polled the task queue for %s", quietPolls))
	return false
}

// recheck reads the pollers of queue for its state st, which no other
// check is reading (st.checking is false). It is called with w.mu held
// and returns with it held, but releases it while it reads, with
// st.checking set so that no other call reads them meanwhile.
func (w *workers) recheck(ctx context.Context, queue string, st *queueState) (time.Time, error) {
	st.checking = true
	w.mu.Unlock()
	newest, _, err := w.pollers(ctx, queue)
	w.mu.Lock()
	st.checking, st.checked = false, w.now()
	if err == nil {
		st.newest = newest
	}
	return newest, err
}

// markLocked marks queue unserved, logging the outage.
func (w *workers) markLocked(queue string, st *queueState, newest time.Time, why string) {
	st.downSince, st.baseline = w.now(), newest
	w.down.Add(1)
	fields := []zap.Field{zap.String("taskQueue", queue), zap.String("reason", why)}
	if !newest.IsZero() {
		fields = append(fields, zap.Time("lastPoll", newest))
	}
	w.log.Warn("no worker serves the task queue: its runs are read from the state they published in Temporal "+
		"(status and open interrupts) until a worker polls again", fields...)
}

// check reads queue's pollers (unless it is marked unserved, which
// unserved checks) and marks it unserved when no worker has polled it for
// liveness.Window. It reports whether the queue is served, and remembers the
// queue so that later calls of unservedQueues check it too.
func (w *workers) check(ctx context.Context, queue string) (bool, error) {
	if w.unserved(ctx, queue) {
		return false, nil
	}
	newest, any, err := w.pollers(ctx, queue)
	if err != nil {
		return false, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	served := any && liveness.Polled(newest, w.now(), liveness.Window)
	st := w.state(queue, !served) // remembered, to be checked again
	if served || st == nil {
		return served, nil
	}
	if st.downSince.IsZero() {
		st.checked = w.now()
		why := "no worker has ever polled the task queue"
		if any {
			why = fmt.Sprintf("no worker has polled the task queue for %s", liveness.Window)
		}
		w.markLocked(queue, st, newest, why)
	}
	return false, nil
}

// unservedQueues checks every queue it watches plus extra, and returns
// those no worker serves, sorted.
func (w *workers) unservedQueues(ctx context.Context, extra ...string) ([]string, error) {
	w.mu.Lock()
	queues := make(map[string]bool, len(w.queues)+len(extra))
	for q := range w.queues {
		queues[q] = true
	}
	w.mu.Unlock()
	for _, q := range extra {
		if q != "" {
			queues[q] = true
		}
	}
	var out []string
	for q := range queues {
		ok, err := w.check(ctx, q)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, q)
		}
	}
	sort.Strings(out)
	return out, nil
}

// pollers reads queue's workflow pollers: the newest last access, and
// whether there is any.
func (w *workers) pollers(ctx context.Context, queue string) (time.Time, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	resp, err := w.c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("describe task queue %q: %w", queue, err)
	}
	var newest time.Time
	for _, p := range resp.GetPollers() {
		if t := p.GetLastAccessTime().AsTime(); t.After(newest) {
			newest = t
		}
	}
	return newest, len(resp.GetPollers()) > 0, nil
}
