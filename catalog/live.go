package catalog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/openwop/temporal-mcp/internal/liveness"
	"github.com/openwop/temporal-mcp/signals"
)

// Defaults of LiveOptions.
const (
	// DefaultMaxAge is how old the view of the catalog may be before a
	// lookup reads Temporal again.
	DefaultMaxAge = 2 * time.Second
	// DefaultLiveWindow is how recently a worker must have polled to count
	// as live: the server's one window (90 s), which the run service's
	// worker watch uses too. Temporal refreshes a poller's last access
	// when a long poll (at most 60 s) starts and ends.
	DefaultLiveWindow = liveness.Window
	// DefaultDeadAfter is how long a publication must have been dead
	// before the reader removes it.
	DefaultDeadAfter = 15 * time.Minute
	// DefaultRecentFor is how long a tool whose publications all closed
	// (its workers stopped) answers unavailable rather than unknown.
	DefaultRecentFor = 15 * time.Minute
)

// publicationsQuery selects the running publications; with closedSince,
// also those closed after a time. Both name the namespace division of the
// publications, which visibility otherwise leaves out, and also take the
// publications without one (a worker of an earlier release, or of another
// language, or on a server that did not accept it).
var (
	publicationsOf = fmt.Sprintf("WorkflowType = '%s' AND (%s = '%s' OR %s IS NULL)", signals.PublicationWorkflowType,
		signals.NamespaceDivisionAttribute, signals.PublicationDivision, signals.NamespaceDivisionAttribute)
	publicationsQuery = publicationsOf + " AND ExecutionStatus = 'Running'"
	closedSince       = publicationsOf + " AND (ExecutionStatus = 'Running' OR CloseTime > '%s')"
)

// LiveOptions configure a Live source.
type LiveOptions struct {
	// Declared are tools declared by the operator (LoadDeclarations) for
	// workflows that do not publish: each is available while any worker
	// of its task queue is live.
	Declared []signals.ToolSpec
	// Namespace is the namespace of the client, where worker heartbeats
	// are listed ("default" when empty).
	Namespace string
	// MaxAge bounds the age of the view a lookup answers from
	// (DefaultMaxAge when 0).
	MaxAge time.Duration
	// LiveWindow is how recently a worker must have polled to be live
	// (DefaultLiveWindow when 0).
	LiveWindow time.Duration
	// DeadAfter is how long a publication stays dead before it is removed
	// (DefaultDeadAfter when 0; negative: never removed).
	DeadAfter time.Duration
	// RecentFor is how long after its last publication closed a tool
	// answers unavailable rather than unknown, and how long after a
	// version's publication closed its spec is among the tool's other
	// versions (OtherVersions) (DefaultRecentFor when 0).
	RecentFor time.Duration
	// Logger receives conflicts and read failures (nop when nil).
	Logger *zap.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Rand draws the number in [0, 1) that sends a call to a ramping
	// version or not (ForCall; rand.Float64 when nil).
	Rand func() float64
}

// Live is the Source the stock server uses: the tools that live workers
// published in Temporal, plus the declared ones. It reads Temporal on
// demand, at most once per MaxAge, in the background while requests keep
// coming (see current), and is safe for concurrent use.
type Live struct {
	c        client.Client
	opts     LiveOptions
	log      *zap.Logger
	declared []*Tool

	refresh sync.Mutex // one reader of Temporal at a time
	mu      sync.Mutex // guards the fields below
	view    *view
	// reading is set while a background reading runs.
	reading bool
	// deadSince is when each dead publication (by workflow ID) was first
	// seen dead.
	deadSince map[string]time.Time
	// reported remembers logged conflicts, so each is logged once.
	reported map[string]bool
	compiled map[string]*Tool // by canonical spec
	// confirmed is when each publication (by workflow ID) was last
	// confirmed running by ForCall, on the process's own clock.
	confirmed map[string]time.Time
	// confirming shares a describe call among the calls that confirm one
	// publication together.
	confirming singleflight.Group
}

// view is one reading of the catalog.
type view struct {
	at    time.Time
	tools []*Tool                      // available, sorted by name
	byKey map[string]*Tool             // available, by name
	unav  map[string]*UnavailableError // known but unavailable, by name
	// served lists, by tool name, the live publications an available
	// tool was found in; nil for a tool a live declaration serves.
	served map[string][]listed
	// others are, by tool name, the other specs of an available tool that
	// live workers of versions taking no new runs serve (OtherVersions).
	others map[string][]*Tool
	// ramps are, by tool name, the ramps the calls of an available tool
	// follow (ForCall).
	ramps map[string]*ramp
}

// NewLive returns a Live source reading the catalog through c.
func NewLive(c client.Client, opts LiveOptions) (*Live, error) {
	if c == nil {
		return nil, errors.New("catalog: a Temporal client is required")
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.LiveWindow <= 0 {
		opts.LiveWindow = DefaultLiveWindow
	}
	opts.DeadAfter = cmp.Or(opts.DeadAfter, DefaultDeadAfter)
	if opts.RecentFor <= 0 {
		opts.RecentFor = DefaultRecentFor
	}
	opts.Namespace = cmp.Or(opts.Namespace, client.DefaultNamespace)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	l := &Live{c: c, opts: opts, log: opts.Logger, deadSince: map[string]time.Time{}, confirmed: map[string]time.Time{}, reported: map[string]bool{}, compiled: map[string]*Tool{}}
	if l.log == nil {
		l.log = zap.NewNop()
	}
	seen := map[string]bool{}
	for _, spec := range opts.Declared {
		if spec.TaskQueue == "" {
			return nil, fmt.Errorf("catalog: declared tool %q has no taskQueue", spec.Name)
		}
		if seen[spec.Name] {
			return nil, fmt.Errorf("catalog: tool %q declared twice", spec.Name)
		}
		seen[spec.Name] = true
		t, err := Compile(spec)
		if err != nil {
			return nil, fmt.Errorf("catalog: declared %w", err)
		}
		l.declared = append(l.declared, t)
	}
	return l, nil
}

// Tools implements Source.
func (l *Live) Tools(ctx context.Context) ([]*Tool, error) {
	v, err := l.current(ctx)
	if err != nil {
		return nil, err
	}
	return v.tools, nil
}

// Lookup implements Source. A name the view does not know as available is
// looked up again in a fresh reading when the view was not fresh, so that
// a tool a new worker just published is found at once.
func (l *Live) Lookup(ctx context.Context, name string) (*Tool, error) {
	v, err := l.current(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := v.byKey[name]; !ok && l.opts.Now().Sub(v.at) >= l.opts.MaxAge {
		if v, err = l.read(ctx, v); err != nil {
			return nil, err
		}
	}
	if t, ok := v.byKey[name]; ok {
		return t, nil
	}
	if u, ok := v.unav[name]; ok {
		return nil, u
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
}

// Refresh reads the catalog from Temporal now.
func (l *Live) Refresh(ctx context.Context) error {
	l.refresh.Lock()
	defer l.refresh.Unlock()
	_, err := l.readLocked(ctx)
	return err
}

// stale is how old a view may be and still be answered at once while a
// background reading replaces it: 2.5 MaxAges, so that with the defaults a
// tool whose workers are gone leaves every answer within 15 s
// (docs/catalog.md#liveness).
func (l *Live) stale() time.Duration { return l.opts.MaxAge * 5 / 2 }

// backgroundReadTimeout bounds a background reading of the catalog.
const backgroundReadTimeout = 30 * time.Second

// current returns the view to answer from without waiting for Temporal
// when it can: a view younger than MaxAge as it is; a view older than that
// but younger than stale() as it is too, while one background
// reading replaces it (so that no request of a busy server waits for a
// reading). An older view, or none, is read now (concurrent callers share
// one reading).
func (l *Live) current(ctx context.Context) (*view, error) {
	l.mu.Lock()
	v := l.view
	age := time.Duration(0)
	if v != nil {
		age = l.opts.Now().Sub(v.at)
	}
	if v != nil && age < l.opts.MaxAge {
		l.mu.Unlock()
		return v, nil
	}
	if v != nil && age < l.stale() {
		if !l.reading {
			l.reading = true
			go l.readInBackground()
		}
		l.mu.Unlock()
		return v, nil
	}
	l.mu.Unlock()
	return l.read(ctx, v)
}

// readInBackground replaces the view with a new reading.
func (l *Live) readInBackground() {
	defer func() {
		l.mu.Lock()
		l.reading = false
		l.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), backgroundReadTimeout)
	defer cancel()
	l.refresh.Lock()
	defer l.refresh.Unlock()
	if l.fresh() != nil {
		return // another caller just read it
	}
	if _, err := l.readLocked(ctx); err != nil {
		l.log.Warn("read the tool catalog in the background; answering from the last reading", zap.Error(err))
	}
}

// read reads the catalog now, unless another caller read it since old was
// current. A failed reading answers from the last good view while it is
// younger than LiveWindow (a short outage of visibility).
func (l *Live) read(ctx context.Context, old *view) (*view, error) {
	l.refresh.Lock()
	defer l.refresh.Unlock()
	l.mu.Lock()
	v := l.view
	l.mu.Unlock()
	if v != nil && v != old {
		return v, nil // another caller just read it
	}
	v, err := l.readLocked(ctx)
	if err != nil {
		if old != nil && l.opts.Now().Sub(old.at) < l.opts.LiveWindow {
			l.log.Warn("read the tool catalog; answering from the last reading", zap.Error(err))
			return old, nil
		}
		return nil, err
	}
	return v, nil
}

func (l *Live) fresh() *view {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.view != nil && l.opts.Now().Sub(l.view.at) < l.opts.MaxAge {
		return l.view
	}
	return nil
}

// listed is one publication as visibility lists it.
type listed struct {
	workflowID string
	pub        signals.Publication
	closed     time.Time // when it closed; zero while it runs
}

// readLocked reads the catalog from Temporal and makes it the view; the
// caller holds l.refresh.
func (l *Live) readLocked(ctx context.Context) (*view, error) {
	now := l.opts.Now()
	pubs, err := listPublications(ctx, l.c, now.Add(-l.opts.RecentFor))
	if err != nil {
		return nil, err
	}
	queues := map[string]bool{}
	var open []listed
	for _, p := range pubs {
		if p.closed.IsZero() {
			open = append(open, p)
			queues[p.pub.TaskQueue] = true
		}
	}
	for _, t := range l.declared {
		queues[t.spec.TaskQueue] = true
	}
	alive, err := workerSignsOf(ctx, l.c, l.opts.Namespace, queues)
	if err != nil {
		return nil, err
	}
	routes, err := routesOf(ctx, l.c, open)
	if err != nil {
		return nil, err
	}
	v := l.build(now, pubs, alive, routes)
	l.collect(ctx, now, open, alive)
	l.mu.Lock()
	l.view = v
	l.mu.Unlock()
	return v, nil
}

// candidate is one source of a tool's spec.
type candidate struct {
	spec signals.ToolSpec
	from string  // who published it, for messages
	live bool    // its worker is live (a declaration: a worker of its queue)
	pub  *listed // the publication; nil for a declaration
}

// build turns publications, the workers' liveness and the deployments'
// routing into a view. A tool only closed publications list is known, and
// unavailable.
func (l *Live) build(now time.Time, pubs []listed, alive workerSigns, routes map[string]routing) *view {
	byName := map[string][]candidate{}
	gone := map[string]listed{} // the newest closed publication of each tool
	// drained are the specs of the versioned publications that closed
	// lately (their versions' workers stopped), by tool name.
	drained := map[string][]signals.ToolSpec{}
	for _, p := range pubs {
		if !p.closed.IsZero() {
			for _, spec := range p.pub.Tools {
				if g, ok := gone[spec.Name]; !ok || p.closed.After(g.closed) {
					gone[spec.Name] = p
				}
				if p.pub.Version != nil {
					spec.TaskQueue = p.pub.TaskQueue
					drained[spec.Name] = append(drained[spec.Name], spec)
				}
			}
			continue
		}
		live := alive.live(p.pub.TaskQueue, p.pub.Identity, now, l.opts.LiveWindow)
		for _, spec := range p.pub.Tools {
			spec.TaskQueue = p.pub.TaskQueue
			byName[spec.Name] = append(byName[spec.Name], candidate{
				spec: spec, from: publisher(p.pub), live: live, pub: &p,
			})
		}
	}
	for _, t := range l.declared {
		byName[t.spec.Name] = append(byName[t.spec.Name], candidate{
			spec: t.spec, from: fmt.Sprintf("the declaration on task queue %q", t.spec.TaskQueue),
			live: alive.anyLive(t.spec.TaskQueue, now, l.opts.LiveWindow),
		})
	}
	v := &view{at: now, byKey: map[string]*Tool{}, unav: map[string]*UnavailableError{}, served: map[string][]listed{},
		others: map[string][]*Tool{}, ramps: map[string]*ramp{}}
	for name, cands := range byName {
		t, pick, unav := l.decide(name, cands, routes)
		if unav != nil {
			v.unav[name] = unav
			continue
		}
		v.byKey[name] = t
		v.tools = append(v.tools, t)
		v.served[name] = servedBy(pick)
		if others := l.otherSpecs(t, cands, drained[name]); len(others) > 0 {
			v.others[name] = others
		}
		if p, ok := rampOf(pick, cands, routes); ok {
			v.ramps[name] = l.rampFor(t, p)
		}
	}
	for name, p := range gone {
		if _, ok := byName[name]; !ok {
			v.unav[name] = withdrawn(name, p)
		}
	}
	sort.Slice(v.tools, func(i, j int) bool { return v.tools[i].spec.Name < v.tools[j].spec.Name })
	return v
}

// rampFor is the ramp of plan p for the listed tool t, with the ramping
// version's spec compiled; one that does not compile is never routed to.
func (l *Live) rampFor(t *Tool, p rampPlan) *ramp {
	r := &ramp{listed: t, current: p.current, ramping: p.ramping, percent: p.percent, served: p.served}
	if p.spec == nil {
		return r
	}
	rt, err := l.compile(*p.spec)
	if err != nil {
		l.log.Warn("the ramping version's spec of a tool does not compile; its calls go to the current version",
			zap.String("tool", t.Name()), zap.String("version", p.ramping.String()), zap.Error(err))
		return r
	}
	r.tool = rt
	return r
}

// publisher names the worker of a publication in messages.
func publisher(pub signals.Publication) string {
	if pub.Version == nil {
		return fmt.Sprintf("worker %q on task queue %q", pub.Identity, pub.TaskQueue)
	}
	return fmt.Sprintf("worker %q of version %q on task queue %q", pub.Identity, pub.Version.String(), pub.TaskQueue)
}

// withdrawn is the error of a tool whose publications all closed, p the
// newest of them.
func withdrawn(name string, p listed) *UnavailableError {
	var tenants []string
	for _, spec := range p.pub.Tools {
		if spec.Name == name {
			tenants = spec.Tenants
		}
	}
	return &UnavailableError{Tool: name, Tenants: tenants, TaskQueues: []string{p.pub.TaskQueue},
		Reason: fmt.Sprintf("no worker serves task queue %q any more (the last publication of the tool, by worker %q, closed at %s); start a worker that serves it",
			p.pub.TaskQueue, p.pub.Identity, p.closed.UTC().Format(time.RFC3339))}
}

// decide picks the spec of one tool from the candidates whose worker is
// live and takes new runs (takingNewRuns), and returns them; none, or
// candidates that disagree, make the tool unavailable.
func (l *Live) decide(name string, cands []candidate, routes map[string]routing) (*Tool, []candidate, *UnavailableError) {
	pick, why := takingNewRuns(cands, routes)
	if len(pick) == 0 {
		queues := map[string]bool{}
		for _, c := range cands {
			queues[c.spec.TaskQueue] = true
		}
		why = cmp.Or(why, fmt.Sprintf("no live worker serves task queue %s; start a worker that serves it", quoteKeys(queues)))
		return nil, nil, &UnavailableError{Tool: name, Tenants: cands[0].spec.Tenants, TaskQueues: sortedKeys(queues), Reason: why}
	}
	first := canonical(pick[0].spec)
	for _, c := range pick[1:] {
		if canonical(c.spec) != first {
			reason := fmt.Sprintf("it is published with different specs (%s differ) by %s and by %s; stop one of them",
				strings.Join(differences(pick[0].spec, c.spec), ", "), pick[0].from, c.from)
			key := name + "\x00" + reason
			l.mu.Lock()
			logged := l.reported[key]
			l.reported[key] = true
			l.mu.Unlock()
			if !logged {
				l.log.Error("conflicting tool publications; the tool is not served", zap.String("tool", name), zap.String("reason", reason))
			}
			return nil, nil, &UnavailableError{Tool: name, Reason: reason, Tenants: pick[0].spec.Tenants,
				TaskQueues: sortedKeys(map[string]bool{pick[0].spec.TaskQueue: true, c.spec.TaskQueue: true})}
		}
	}
	t, err := l.compile(pick[0].spec)
	if err != nil {
		l.log.Error("a published tool does not compile; it is not served", zap.String("tool", name), zap.Error(err))
		return nil, nil, &UnavailableError{Tool: name, Reason: "its published spec is invalid: " + err.Error(), Tenants: pick[0].spec.Tenants,
			TaskQueues: []string{pick[0].spec.TaskQueue}}
	}
	return t, pick, nil
}

// compile compiles spec, or returns the tool compiled of the same spec
// before.
func (l *Live) compile(spec signals.ToolSpec) (*Tool, error) {
	key := canonical(spec)
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.compiled[key]; ok {
		return t, nil
	}
	t, err := Compile(spec)
	if err != nil {
		return nil, err
	}
	if len(l.compiled) > 4096 {
		clear(l.compiled)
	}
	l.compiled[key] = t
	return t, nil
}

// collect terminates the running publications (pubs) whose worker has not
// been live for DeadAfter (crashed workers never withdraw theirs).
func (l *Live) collect(ctx context.Context, now time.Time, pubs []listed, alive workerSigns) {
	if l.opts.DeadAfter < 0 {
		return
	}
	l.mu.Lock()
	var doomed []string
	running := map[string]bool{}
	for _, p := range pubs {
		running[p.workflowID] = true
		if alive.live(p.pub.TaskQueue, p.pub.Identity, now, l.opts.LiveWindow) {
			delete(l.deadSince, p.workflowID)
			continue
		}
		since, ok := l.deadSince[p.workflowID]
		if !ok {
			l.deadSince[p.workflowID] = now
			continue
		}
		if now.Sub(since) >= l.opts.DeadAfter {
			doomed = append(doomed, p.workflowID)
			delete(l.deadSince, p.workflowID)
		}
	}
	for id := range l.deadSince {
		if !running[id] {
			delete(l.deadSince, id)
		}
	}
	l.mu.Unlock()
	for _, id := range doomed {
		err := l.c.TerminateWorkflow(ctx, id, "", "openwop: the publishing worker has not polled for "+l.opts.DeadAfter.String())
		var nf *serviceerror.NotFound
		if err != nil && !errors.As(err, &nf) {
			l.log.Warn("remove a dead tool publication", zap.String("publication", id), zap.Error(err))
			continue
		}
		l.log.Info("removed the publication of a worker that stopped polling", zap.String("publication", id))
	}
}

// Publications lists the running publications of every worker: what each
// serves, and the Worker Deployment version it is. An operator's check
// of what one version serves reads them (openwop-server versions
// move-runs).
func Publications(ctx context.Context, c client.Client) ([]signals.Publication, error) {
	listed, err := listPublications(ctx, c, time.Time{})
	if err != nil {
		return nil, err
	}
	out := make([]signals.Publication, len(listed))
	for i, p := range listed {
		out[i] = p.pub
	}
	return out, nil
}

// listPublications lists the running publications with their memo, and,
// when since is not zero, those that closed after since.
func listPublications(ctx context.Context, c client.Client, since time.Time) ([]listed, error) {
	dc := converter.GetDefaultDataConverter()
	query := publicationsQuery
	if !since.IsZero() {
		query = fmt.Sprintf(closedSince, since.UTC().Format(time.RFC3339Nano))
	}
	var out []listed
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			PageSize: 1000, NextPageToken: token, Query: query,
		})
		if err != nil {
			return nil, fmt.Errorf("list tool publications: %w", err)
		}
		for _, info := range resp.GetExecutions() {
			if p, ok := decodePublication(dc, info); ok {
				out = append(out, p)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

func decodePublication(dc converter.DataConverter, info *workflowpb.WorkflowExecutionInfo) (listed, bool) {
	field, ok := info.GetMemo().GetFields()[signals.MemoPublication]
	if !ok {
		return listed{}, false
	}
	var pub signals.Publication
	if err := dc.FromPayload(field, &pub); err != nil || pub.TaskQueue == "" {
		return listed{}, false
	}
	p := listed{workflowID: info.GetExecution().GetWorkflowId(), pub: pub}
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		p.closed = info.GetCloseTime().AsTime()
	}
	return p, true
}

// pollers are the last accesses of a task queue's workflow pollers, by
// identity.
type pollers map[string]time.Time

// live reports whether identity polled within window of now.
func (p pollers) live(identity string, now time.Time, window time.Duration) bool {
	t, ok := p[identity]
	return ok && liveness.Polled(t, now, window)
}

// pollersOf describes each task queue's workflow pollers.
func pollersOf(ctx context.Context, c client.Client, queues map[string]bool) (map[string]pollers, error) {
	out := make(map[string]pollers, len(queues))
	for q := range queues {
		resp, err := c.DescribeTaskQueue(ctx, q, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err != nil {
			return nil, fmt.Errorf("describe task queue %q: %w", q, err)
		}
		ps := pollers{}
		for _, p := range resp.GetPollers() {
			if t := p.GetLastAccessTime().AsTime(); t.After(ps[p.GetIdentity()]) {
				ps[p.GetIdentity()] = t
			}
		}
		out[q] = ps
	}
	return out, nil
}

func quoteKeys(m map[string]bool) string {
	keys := sortedKeys(m)
	for i, k := range keys {
		keys[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(keys, ", ")
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
