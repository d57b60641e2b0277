package workflows

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry"
)

// DefaultWorkflowCacheSize is the size of the workflow cache the stock
// commands give their worker (worker.SetStickyWorkflowCacheSize; the SDK's
// default is 10,000). A cached run keeps its workflow goroutines and state
// in memory, tens of KB each, for as long as it stays open, so the SDK
// default lets 10,000 tasks waiting for approval cost about 1 GB. A run
// that fell out of the cache is replayed from its history when it next
// gets a workflow task, and on every getRun query until then (a few
// milliseconds for a run of a few dozen events).
//
// The setting is process-wide and must be made before any worker starts:
//
//	worker.SetStickyWorkflowCacheSize(workflows.DefaultWorkflowCacheSize)
const DefaultWorkflowCacheSize = 1000

// DefaultWorkerStopTimeout is how long Registry.Run, once stopped, lets the
// activities in flight finish before the SDK cancels them, when
// worker.Options.WorkerStopTimeout is zero (the SDK's zero waits for none).
const DefaultWorkerStopTimeout = 20 * time.Second

// WorkerOptions configure Registry.Run.
type WorkerOptions struct {
	// Worker are the options of the Temporal worker. Worker.Identity, when
	// empty, is "<pid>@<host>@<task queue>": the identity the catalog
	// judges the worker live by, from the heartbeats Run sends every
	// catalog.WorkerHeartbeatInterval (a killed worker's tools leave the
	// catalog within 15 s; no client option is needed).
	// DefaultHeartbeatThrottleInterval and MaxHeartbeatThrottleInterval,
	// when zero, are one second: a heartbeat of an activity (activities.Run
	// sends one every second) reaches Temporal within about a second,
	// whatever its HeartbeatTimeout, so a cancellation reaches the activity
	// and its progress is saved within about that. When
	// neither MaxConcurrentWorkflowTaskPollers nor
	// WorkflowTaskPollerBehavior is set, the workflow task pollers scale
	// with the load (worker.NewPollerBehaviorAutoscaling with its
	// defaults) instead of the SDK's fixed two: every getRun query of a
	// polling client is a workflow task of the run's worker, and past
	// saturation two pollers left the worker behind its sticky queue
	// (throughput at 200 polling clients fell to 0.75 of that at 50; it
	// held at 1.06 with autoscaling). Run adds an interceptor to
	// Worker.Interceptors that logs the SDK's warning about a heartbeat
	// answered with the activity's cancellation at DEBUG level: a normal
	// cancellation is no warning.
	Worker worker.Options
	// Logger receives the worker's lifecycle messages: the tools it
	// published and withdrew, and failures to keep its publication (nil:
	// the log/slog default logger, on standard error).
	Logger log.Logger
	// Namespace is the namespace of the client, where the worker's catalog
	// heartbeats go; empty asks the client (catalog.ClientNamespace).
	Namespace string
	// CheckInterval is how often the worker checks that its publication is
	// still in the catalog, publishing it again when it is not (default
	// one minute).
	CheckInterval time.Duration
	// TracerProvider, when set, traces the worker with the Temporal SDK's
	// OpenTelemetry interceptor (telemetry.TemporalInterceptor): each
	// workflow, activity, signal and query handler runs in a span, the
	// child of the span that started, signalled or queried it (the agent's
	// request to the mount, for a run), and the harness records each
	// resolved interrupt as a span of the run's trace. Leave it nil when
	// the client already has the interceptor (telemetry/export.Telemetry's
	// ClientOptions does that; workers inherit a client's interceptors),
	// or every span would be recorded twice.
	TracerProvider trace.TracerProvider
	// DeploymentName and BuildID, when set (both, or neither), make the
	// worker one version of a Temporal Worker Deployment: DeploymentName
	// names the deployment (no "."), BuildID the build of the code it runs
	// (a release tag, a commit). Temporal starts the new runs of the task
	// queue on the deployment's current version (set by an operator:
	// `temporal worker deployment set-current-version`, or
	// client.WorkerDeploymentClient), and each tool's runs follow its
	// versioning behavior: pinned, the default, finishes every run on the
	// build that started it; WithVersioningBehavior chooses auto-upgrade
	// per tool. The publication names the version (signals.Publication's
	// Version), so that the catalog lists the tools of the current version
	// and takes the others for a rollout (docs/upgrades.md). Unset, the
	// worker is unversioned, as before. The stock cmd/worker reads them
	// from TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID. Setting
	// Worker.DeploymentOptions instead is the same, with its own
	// DefaultVersioningBehavior (pinned when unspecified).
	DeploymentName string
	// BuildID is the build of a versioned worker (see DeploymentName).
	BuildID string
}

// version fills in Worker.DeploymentOptions of a versioned worker and
// returns the version it serves, nil for an unversioned worker.
func (opts *WorkerOptions) version() (*signals.DeploymentVersion, error) {
	d := &opts.Worker.DeploymentOptions
	if (opts.DeploymentName == "") != (opts.BuildID == "") {
		return nil, fmt.Errorf("a versioned worker needs both a deployment name and a build id (got %q and %q)", opts.DeploymentName, opts.BuildID)
	}
	if opts.DeploymentName != "" {
		want := worker.WorkerDeploymentVersion{DeploymentName: opts.DeploymentName, BuildID: opts.BuildID}
		if d.UseVersioning && d.Version != want {
			return nil, fmt.Errorf("deployment version %s differs from Worker.DeploymentOptions' %s", versionOf(want), versionOf(d.Version))
		}
		d.UseVersioning, d.Version = true, want
	}
	if !d.UseVersioning {
		return nil, nil
	}
	if d.Version.DeploymentName == "" || d.Version.BuildID == "" || strings.Contains(d.Version.DeploymentName, ".") {
		return nil, fmt.Errorf("deployment version %q: want a deployment name without \".\" and a build id", versionOf(d.Version))
	}
	if d.DefaultVersioningBehavior == workflow.VersioningBehaviorUnspecified {
		d.DefaultVersioningBehavior = workflow.VersioningBehaviorPinned
	}
	v := versionOf(d.Version)
	return &v, nil
}

// versionOf is the SDK's deployment version as the catalog names it.
func versionOf(v worker.WorkerDeploymentVersion) signals.DeploymentVersion {
	return signals.DeploymentVersion{DeploymentName: v.DeploymentName, BuildID: v.BuildID}
}

// Publication is what a worker with the given identity serving the
// registry on taskQueue publishes to the catalog.
func (r *Registry) Publication(taskQueue, identity string) signals.Publication {
	specs := r.Specs()
	for i := range specs {
		specs[i].TaskQueue = taskQueue
	}
	return signals.Publication{TaskQueue: taskQueue, Identity: identity, Tools: specs}
}

// Run runs a worker of the registry's tools on taskQueue until ctx is done
// or the worker fails. It registers the tools and activities, starts the
// worker, publishes the tools to the catalog (catalog.Publish, which fails
// when a live worker publishes a different spec under one of the names),
// keeps the publication while it runs, and tells the catalog it is alive
// every catalog.WorkerHeartbeatInterval (catalog.Heartbeat, whatever the
// client's own worker heartbeat interval), so that a worker killed without
// warning has its tools leave the catalog within seconds.
//
// When ctx ends it stops in this order: it withdraws the publication and
// tells the catalog it is stopping, so that from then on the server starts
// no new run for it; it keeps polling for catalog.StopGrace (one second),
// the longest a server may still start a run it routed before it saw the
// withdrawal, so that such a run is picked up as any run in flight; and
// only then stops the Temporal worker, which lets
// the tasks in flight finish (worker.Options.WorkerStopTimeout,
// DefaultWorkerStopTimeout when zero); runs it
// leaves unfinished are continued by another worker of the task queue,
// as Temporal does.
//
// It returns nil when ctx ends, and the error otherwise: a worker that
// cannot start, a conflicting publication, or a fatal worker error.
func (r *Registry) Run(ctx context.Context, c client.Client, taskQueue string, opts WorkerOptions) error {
	if taskQueue == "" {
		return errors.New("run worker: a task queue is required")
	}
	opts = opts.withDefaults(taskQueue)
	version, err := opts.version()
	if err != nil {
		return fmt.Errorf("run worker on task queue %q: %w", taskQueue, err)
	}
	fatal := make(chan error, 1)
	onFatal := opts.Worker.OnFatalError
	opts.Worker.OnFatalError = func(err error) {
		if onFatal != nil {
			onFatal(err)
		}
		select {
		case fatal <- err:
		default:
		}
	}
	if opts.TracerProvider != nil {
		i, err := telemetry.TemporalInterceptor(opts.TracerProvider)
		if err != nil {
			return fmt.Errorf("run worker: %w", err)
		}
		opts.Worker.Interceptors = append(slices.Clip(opts.Worker.Interceptors), i)
	}
	opts.Worker.Interceptors = append(slices.Clip(opts.Worker.Interceptors), &quietCancellation{})
	if opts.Namespace == "" {
		ns, err := catalog.ClientNamespace(ctx, c)
		if err != nil {
			return fmt.Errorf("run worker on task queue %q: %w", taskQueue, err)
		}
		opts.Namespace = ns
	}
	w := worker.New(c, taskQueue, opts.Worker)
	r.Register(w)
	s := &serving{c: c, w: w, log: opts.Logger, pub: r.Publication(taskQueue, opts.Worker.Identity)}
	if r.set != nil {
		s.static = slices.Clone(s.pub.Tools)
		s.dynamic = newDynamicTools(r, w, opts.Logger)
		s.pub.Tools = s.withDynamic(s.dynamic.update())
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker on task queue %q: %w", taskQueue, err)
	}
	s.pub.Version = version
	s.versionTools = version != nil
	s.beat = catalog.Heartbeat{Namespace: opts.Namespace, Publication: s.pub, Started: time.Now()}
	s.sendBeat(ctx, false)
	if err := catalog.Publish(ctx, c, s.pub); err != nil {
		s.sendBeat(context.WithoutCancel(ctx), true)
		w.Stop()
		return err
	}
	s.log.Info("Worker ready; tools published", "taskQueue", taskQueue, "identity", s.pub.Identity, "version", versionName(version), "tools", toolNames(s.pub))
	defer s.stop(ctx)
	return s.serve(ctx, opts.CheckInterval, fatal)
}

// withDefaults fills in the defaults of opts for a worker of taskQueue.
func (opts WorkerOptions) withDefaults(taskQueue string) WorkerOptions {
	if opts.Worker.Identity == "" {
		host, _ := os.Hostname()
		opts.Worker.Identity = fmt.Sprintf("%d@%s@%s", os.Getpid(), host, taskQueue)
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = time.Minute
	}
	if opts.Worker.MaxConcurrentWorkflowTaskPollers == 0 && opts.Worker.WorkflowTaskPollerBehavior == nil {
		opts.Worker.WorkflowTaskPollerBehavior = worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{})
	}
	if opts.Worker.DefaultHeartbeatThrottleInterval == 0 {
		// Cancellation reaches an activity only with a heartbeat response:
		// without a heartbeat timeout the SDK would send heartbeats only
		// every 30 s, so a cancelled run would wait that long.
		opts.Worker.DefaultHeartbeatThrottleInterval = time.Second
	}
	if opts.Worker.MaxHeartbeatThrottleInterval == 0 {
		// With a heartbeat timeout the SDK sends heartbeats every 80% of
		// it (4 s of a 5 s timeout), whatever the activity's interval: a
		// cancellation would take that long to arrive, and a crash would
		// lose that much progress. One second bounds both.
		opts.Worker.MaxHeartbeatThrottleInterval = time.Second
	}
	opts.Worker.WorkerStopTimeout = cmp.Or(opts.Worker.WorkerStopTimeout, DefaultWorkerStopTimeout)
	if opts.Logger == nil {
		opts.Logger = log.NewStructuredLogger(slog.Default())
	}
	return opts
}

// serving is a started worker and its publication.
type serving struct {
	c    client.Client
	w    worker.Worker
	log  log.Logger
	pub  signals.Publication
	beat catalog.Heartbeat
	// beatFailed is set while heartbeats fail, so that a failure is
	// logged once.
	beatFailed bool
	// versionTools is set while the tools are still to be recorded in the
	// metadata of the worker's deployment version; versionTries counts
	// the attempts.
	versionTools bool
	versionTries int
	// static are the specs of the registry's own tools, published with
	// those of dynamic, the tools of the registry's ToolSet (nil for
	// none).
	static  []signals.ToolSpec
	dynamic *dynamicTools
}

// withDynamic returns the specs of the registry's own tools and the
// tool set's specs, sorted by name.
func (s *serving) withDynamic(specs []signals.ToolSpec) []signals.ToolSpec {
	all := append(slices.Clone(s.static), specs...)
	slices.SortFunc(all, func(a, b signals.ToolSpec) int { return strings.Compare(a.Name, b.Name) })
	for i := range all {
		all[i].TaskQueue = s.pub.TaskQueue
	}
	return all
}

// republish publishes the worker's tools again after its tool set
// changed. A failure is logged: the next check publishes again.
func (s *serving) republish(ctx context.Context) {
	tools := s.withDynamic(s.dynamic.update())
	if reflect.DeepEqual(tools, s.pub.Tools) {
		return
	}
	published := s.pub
	s.pub.Tools = tools
	s.beat.Publication = s.pub
	err := catalog.Publish(ctx, s.c, s.pub)
	var conflict *catalog.ConflictError
	if errors.As(err, &conflict) {
		// Another worker still publishes the earlier spec of a changed
		// tool (a replica that has not seen the change yet): publish the
		// rest now, and the changed tools at the next check, once it
		// has, rather than wait on each other.
		rest := published
		rest.Tools = unchanged(tools, published.Tools)
		if catalog.Publish(ctx, s.c, rest) == nil {
			s.log.Warn("Changed tools conflict with another worker's publication; published the others, the changed ones at the next check", "taskQueue", s.pub.TaskQueue, "error", err)
			return
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("Could not publish the changed tools; trying again at the next check", "taskQueue", s.pub.TaskQueue, "error", err)
		}
		return
	}
	s.versionTools = s.pub.Version != nil
	s.versionTries = 0
	s.log.Info("Tools changed; published again", "taskQueue", s.pub.TaskQueue, "tools", toolNames(s.pub))
}

// unchanged is tools without those whose spec differs from the spec
// of the same name in before.
func unchanged(tools, before []signals.ToolSpec) []signals.ToolSpec {
	var out []signals.ToolSpec
	for _, t := range tools {
		i := slices.IndexFunc(before, func(b signals.ToolSpec) bool { return b.Name == t.Name })
		if i < 0 || reflect.DeepEqual(before[i], t) {
			out = append(out, t)
		}
	}
	return out
}

// maxVersionTries bounds the attempts to record the tools in the version's
// metadata, one a heartbeat interval (Temporal knows the version once the
// worker has polled, within seconds).
const maxVersionTries = 20

// recordVersionTools records the worker's tools in the metadata of its
// deployment version (catalog.RecordVersionTools), for operators: until it
// succeeds, or maxVersionTries attempts failed.
func (s *serving) recordVersionTools(ctx context.Context) {
	tctx, cancel := context.WithTimeout(ctx, catalog.WorkerHeartbeatInterval)
	defer cancel()
	err := catalog.RecordVersionTools(tctx, s.c, s.pub)
	s.versionTries++
	switch {
	case err == nil:
		s.versionTools = false
		s.log.Info("Tools recorded in the version's metadata", "version", versionName(s.pub.Version), "key", catalog.VersionMetadataKey(s.pub.TaskQueue))
	case s.versionTries >= maxVersionTries && ctx.Err() == nil:
		s.versionTools = false
		s.log.Warn("Could not record the tools in the version's metadata", "version", versionName(s.pub.Version), "error", err)
	}
}

// serve keeps the publication and its heartbeats until ctx ends or the
// worker fails.
func (s *serving) serve(ctx context.Context, checkEvery time.Duration, fatal <-chan error) error {
	check := time.NewTicker(checkEvery)
	defer check.Stop()
	beat := time.NewTicker(catalog.WorkerHeartbeatInterval)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-fatal:
			return fmt.Errorf("worker on task queue %q: %w", s.pub.TaskQueue, err)
		case <-s.dynamic.changed():
			s.republish(ctx)
		case <-beat.C:
			s.sendBeat(ctx, false)
			if s.versionTools {
				s.recordVersionTools(ctx)
			}
		case <-check.C:
			ok, err := catalog.Published(ctx, s.c, s.pub)
			if err == nil && !ok {
				err = catalog.Publish(ctx, s.c, s.pub)
				if err == nil {
					s.log.Info("Tool publication was gone; published again", "taskQueue", s.pub.TaskQueue, "tools", toolNames(s.pub))
				}
			}
			if err != nil && ctx.Err() == nil {
				s.log.Warn("Could not check the tool publication", "error", err)
			}
		}
	}
}

// sendBeat sends one heartbeat of the publication, logging the first
// failure of a series (a server without worker heartbeats judges the
// worker by its pollers instead).
func (s *serving) sendBeat(ctx context.Context, stopping bool) {
	err := s.beat.Send(ctx, s.c, stopping)
	switch {
	case err != nil && !s.beatFailed && ctx.Err() == nil:
		s.log.Warn("Could not send the worker's catalog heartbeat; the catalog judges it by its pollers", "error", err)
		s.beatFailed = true
	case err == nil:
		s.beatFailed = false
	}
}

// stop withdraws the publication and tells the catalog the worker is
// stopping, keeps polling for catalog.StopGrace, so that a run
// a server started before it saw the withdrawal is picked up, then stops
// the Temporal worker (which drains its tasks).
func (s *serving) stop(ctx context.Context) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := catalog.Withdraw(wctx, s.c, s.pub.TaskQueue, s.pub.Identity); err != nil {
		s.log.Warn("Could not withdraw the tool publication", "taskQueue", s.pub.TaskQueue, "error", err)
	} else {
		s.log.Info("Worker stopping; tools withdrawn", "taskQueue", s.pub.TaskQueue, "identity", s.pub.Identity, "tools", toolNames(s.pub))
	}
	s.sendBeat(wctx, true)
	time.Sleep(catalog.StopGrace)
	s.w.Stop()
}

// versionName names a deployment version in a log line ("unversioned"
// for none).
func versionName(v *signals.DeploymentVersion) string {
	if v == nil {
		return "unversioned"
	}
	return v.String()
}

// toolNames lists the names of the tools of pub.
func toolNames(pub signals.Publication) []string {
	names := make([]string, len(pub.Tools))
	for i, t := range pub.Tools {
		names[i] = t.Name
	}
	return names
}
