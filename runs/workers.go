package runs

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/liveness"
	"github.com/openwop/temporal-mcp/signals"
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

// target is what serves a run: the workers of its task queue or, for a
// run pinned to a Worker Deployment version, that version's workers of
// the queue. A queue polled only by workers of other builds does not serve
// a pinned run: Temporal hands its workflow tasks to its own version only.
type target struct {
	queue string
	// version is the version the run is pinned to (zero: any worker of
	// the queue serves it).
	version signals.DeploymentVersion
}

// pinned reports whether only one version's workers serve the target.
func (t target) pinned() bool { return t.version.BuildID != "" }

// fields are the log fields naming the target.
func (t target) fields() []zap.Field {
	f := []zap.Field{zap.String("taskQueue", t.queue)}
	if t.pinned() {
		f = append(f, zap.String("deploymentName", t.version.DeploymentName), zap.String("buildId", t.version.BuildID))
	}
	return f
}

// servedBy is the target that serves the run info describes: its task
// queue, and the version it is pinned to, by its versioning behaviour or
// by an override (a one-time override sends its next workflow task to its
// version too). An auto-upgrade or unversioned run is served by any worker
// of its queue.
func servedBy(info *workflowpb.WorkflowExecutionInfo) target {
	t := target{queue: info.GetTaskQueue()}
	vi := info.GetVersioningInfo()
	o := vi.GetVersioningOverride()
	v := vi.GetDeploymentVersion()
	switch {
	case o.GetPinned() != nil:
		v = o.GetPinned().GetVersion()
	case o.GetOneTime() != nil:
		v = o.GetOneTime().GetTargetDeploymentVersion()
	case o.GetAutoUpgrade() || vi.GetBehavior() != enumspb.VERSIONING_BEHAVIOR_PINNED:
		return t
	}
	if v.GetBuildId() != "" {
		t.version = signals.DeploymentVersion{DeploymentName: v.GetDeploymentName(), BuildID: v.GetBuildId()}
	}
	return t
}

// Unserved is a task queue, or one Worker Deployment version's share of
// it, that no worker serves (Service.UnservedQueues).
type Unserved struct {
	// TaskQueue is the task queue.
	TaskQueue string `json:"taskQueue"`
	// Version, when set, is the version that runs waiting on the queue
	// are pinned to: no worker of that build polls the queue, whether or
	// not workers of other builds do.
	Version *signals.DeploymentVersion `json:"version,omitempty"`
}

// String names the queue, and the build and deployment of a version.
func (u Unserved) String() string {
	if u.Version == nil {
		return fmt.Sprintf("task queue %q", u.TaskQueue)
	}
	return fmt.Sprintf("build %q of worker deployment %q on task queue %q", u.Version.BuildID, u.Version.DeploymentName, u.TaskQueue)
}

// workers watches whether a worker serves each target (task queue, or
// version of a pinned run on it) that runs live on, so that reads skip
// the getRun query while none does: a query no worker answers waits until
// its deadline. It costs nothing while every target is served (one map
// lookup per read).
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
	queues map[target]*queueState
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
	return &workers{c: c, log: log, now: time.Now, queues: map[target]*queueState{}}
}

// anyDown reports whether some queue is marked unserved.
func (w *workers) anyDown() bool {
	return w.down.Load() > 0
}

// state returns the target's state, remembering the target when there
// is room (or when add is set).
func (w *workers) state(t target, add bool) *queueState {
	st := w.queues[t]
	if st == nil && (add || len(w.queues) < maxWatched) {
		st = &queueState{}
		w.queues[t] = st
	}
	return st
}

// unserved reports whether the target t is marked unserved. While it is,
// it reads the queue's pollers at most once per pollerRecheck to learn
// whether a worker (of t's version) polls again.
func (w *workers) unserved(ctx context.Context, t target) bool {
	if t.queue == "" {
		return false
	}
	w.mu.Lock()
	st := w.queues[t]
	if st == nil || st.downSince.IsZero() {
		w.mu.Unlock()
		return false
	}
	if st.checking || w.now().Sub(st.checked) < pollerRecheck {
		w.mu.Unlock()
		return true
	}
	newest, err := w.recheck(ctx, t, st)
	defer w.mu.Unlock()
	if err != nil {
		w.log.Debug("read the pollers of a task queue marked unserved", append(t.fields(), zap.Error(err))...)
		return true
	}
	if !newest.After(st.baseline) {
		return true
	}
	w.servedLocked(t, st, "a worker polls the task queue again")
	return false
}

// servedLocked ends the outage of t, marked unserved, for the reason why.
func (w *workers) servedLocked(t target, st *queueState, why string) {
	w.log.Info(why+"; runs are read from their workers", append(t.fields(), zap.Duration("outage", w.now().Sub(st.downSince)))...)
	st.downSince, st.baseline = time.Time{}, time.Time{}
	w.down.Add(-1)
}

// answered records that a worker answered a getRun query of a run on
// queue: the queue is served, even when Temporal lists no recent poll of
// it (a worker busy with a backlog on its sticky queue polls only that
// one, which DescribeTaskQueue does not show).
func (w *workers) answered(t target) {
	if t.queue == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.state(t, false)
	if st == nil {
		return
	}
	st.answered = w.now()
	if !st.downSince.IsZero() {
		w.servedLocked(t, st, "a worker answered a getRun query")
	}
}

// late records that a getRun query of a run on queue, sent at sent, got
// no answer within the read's patience, and reports whether a worker
// still serves the queue: one answered a getRun query there (answered) or
// polled the queue since sent. The run is then only slow (its worker short
// of CPU, Temporal loaded), and the reader waits for the query it sent
// rather than adding a describe call to the load. Otherwise the reader
// describes the run; and when no worker has polled the queue or answered
// there for quietPolls either, the queue is marked unserved, if mark is
// set: t is what serves the run, as a describe call told it (a run pinned
// to a version waits for that build's workers only). The pollers
// are read at most once per pollerRecheck; meanwhile the last reading
// answers. That compares Temporal's clock with this process's: a skew of
// more than a few seconds can take a slow worker for a missing one (until
// its next poll) or delay the mark (until a later query that gets no
// answer).
func (w *workers) late(ctx context.Context, t target, sent time.Time, mark bool) bool {
	if t.queue == "" {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.state(t, true)
	if !st.downSince.IsZero() {
		return false
	}
	if st.answered.After(sent) {
		return true
	}
	// checked: the pollers were read since the query was sent (by this
	// call, or by the wait's call that could not mark t).
	newest, checked := st.newest, !st.checking && st.checked.After(sent)
	if !st.checking && w.now().Sub(st.checked) >= pollerRecheck {
		var err error
		if newest, err = w.recheck(ctx, t, st); err != nil {
			w.log.Debug("read the pollers of a task queue whose run did not answer", append(t.fields(), zap.Error(err))...)
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
		w.log.Debug("a getRun query got no answer in time, but a worker served the task queue lately", t.fields()...)
		return false
	case !mark:
		return false
	}
	w.markLocked(t, st, newest, fmt.Sprintf("a getRun query got no answer and no worker has polled the task queue for %s", quietPolls))
	return false
}

// recheck reads the pollers of t for its state st, which no other check
// is reading (st.checking is false). It is called with w.mu held and
// returns with it held, but releases it while it reads, with st.checking
// set so that no other call reads them meanwhile.
func (w *workers) recheck(ctx context.Context, t target, st *queueState) (time.Time, error) {
	st.checking = true
	w.mu.Unlock()
	newest, _, err := w.pollers(ctx, t)
	w.mu.Lock()
	st.checking, st.checked = false, w.now()
	if err == nil {
		st.newest = newest
	}
	return newest, err
}

// markLocked marks t unserved, logging the outage.
func (w *workers) markLocked(t target, st *queueState, newest time.Time, why string) {
	st.downSince, st.baseline = w.now(), newest
	w.down.Add(1)
	fields := append(t.fields(), zap.String("reason", why))
	if !newest.IsZero() {
		fields = append(fields, zap.Time("lastPoll", newest))
	}
	if t.pinned() {
		w.log.Warn(fmt.Sprintf("no worker of build %q of worker deployment %q polls task queue %q: the runs pinned to it wait "+
			"(workers of other builds do not serve them) and are read from the state they published in Temporal until one polls; "+
			"start that build's workers, or move its runs to the current version (openwop-server versions move-runs)",
			t.version.BuildID, t.version.DeploymentName, t.queue), fields...)
		return
	}
	w.log.Warn("no worker serves the task queue: its runs are read from the state they published in Temporal "+
		"(status and open interrupts) until a worker polls again", fields...)
}

// check reads t's pollers (unless it is marked unserved, which unserved
// checks) and marks it unserved when no worker (of t's version) has polled
// it for liveness.Window. It reports whether t is served, and remembers it
// so that later calls of unservedQueues check it too; a pinned target
// that no open run is pinned to any more counts as served and is
// forgotten.
func (w *workers) check(ctx context.Context, t target) (bool, error) {
	if w.unserved(ctx, t) {
		return w.drained(ctx, t), nil
	}
	newest, any, err := w.pollers(ctx, t)
	if err != nil {
		return false, err
	}
	served := any && liveness.Polled(newest, w.now(), liveness.Window)
	if !served && w.drained(ctx, t) {
		return true, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.state(t, !served) // remembered, to be checked again
	if served || st == nil {
		return served, nil
	}
	if st.downSince.IsZero() {
		st.checked = w.now()
		why := "no worker has ever polled the task queue"
		if any {
			why = fmt.Sprintf("no worker has polled the task queue for %s", liveness.Window)
		}
		w.markLocked(t, st, newest, why)
	}
	return false, nil
}

// drained reports whether t is pinned and no open run is pinned to its
// version any more (its runs ended or moved): a build no run waits for is
// no outage, and the watch forgets it.
func (w *workers) drained(ctx context.Context, t target) bool {
	if !t.pinned() {
		return false
	}
	if n, err := w.pinnedRuns(ctx, t.version); err != nil || n > 0 {
		return false
	}
	w.forget(t)
	return true
}

// forget stops watching the pinned target t: no open run is pinned to its
// version any more.
func (w *workers) forget(t target) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.queues[t]
	if st == nil {
		return
	}
	delete(w.queues, t)
	if !st.downSince.IsZero() {
		w.down.Add(-1)
		w.log.Info("no open run is pinned to the version any more; its outage is over", t.fields()...)
	}
}

// pinnedRuns counts the open runs pinned to v (Temporal's own search
// attributes, which a versioning override updates at once).
func (w *workers) pinnedRuns(ctx context.Context, v signals.DeploymentVersion) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	q := fmt.Sprintf("TemporalWorkerDeploymentVersion = '%s:%s' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'",
		strings.ReplaceAll(v.DeploymentName, "'", `\'`), strings.ReplaceAll(v.BuildID, "'", `\'`))
	resp, err := w.c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: q})
	if err != nil {
		return 0, fmt.Errorf("count the runs pinned to %s: %w", v, err)
	}
	return resp.GetCount(), nil
}

// unservedQueues checks every target it watches plus the task queues in
// extra, and returns those no worker serves, sorted by queue then version.
func (w *workers) unservedQueues(ctx context.Context, extra ...string) ([]Unserved, error) {
	w.mu.Lock()
	targets := make(map[target]bool, len(w.queues)+len(extra))
	for t := range w.queues {
		targets[t] = true
	}
	w.mu.Unlock()
	for _, q := range extra {
		if q != "" {
			targets[target{queue: q}] = true
		}
	}
	var out []Unserved
	for t := range targets {
		ok, err := w.check(ctx, t)
		if err != nil {
			return nil, err
		}
		if !ok {
			u := Unserved{TaskQueue: t.queue}
			if t.pinned() {
				v := t.version
				u.Version = &v
			}
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// pollers reads the workflow pollers of t's queue (of t's version only,
// when it is pinned): the newest last access, and whether there is any.
// Temporal lists the pollers of every version of the queue, each with the
// deployment options it polled with.
func (w *workers) pollers(ctx context.Context, t target) (time.Time, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	resp, err := w.c.DescribeTaskQueue(ctx, t.queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("describe task queue %q: %w", t.queue, err)
	}
	var newest time.Time
	any := false
	for _, p := range resp.GetPollers() {
		if d := p.GetDeploymentOptions(); t.pinned() && (d.GetDeploymentName() != t.version.DeploymentName || d.GetBuildId() != t.version.BuildID) {
			continue
		}
		any = true
		if at := p.GetLastAccessTime().AsTime(); at.After(newest) {
			newest = at
		}
	}
	return newest, any, nil
}
