package workflows

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

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

// WorkerOptions configure Registry.Run.
type WorkerOptions struct {
	// Worker are the options of the Temporal worker. Worker.Identity, when
	// empty, is "<pid>@<host>@<task queue>": the identity the catalog
	// judges the worker live by, from its heartbeats (give the client
	// client.Options.WorkerHeartbeatInterval = catalog.WorkerHeartbeatInterval
	// for a crash to be seen within seconds) or its pollers. DefaultHeartbeatThrottleInterval, when
	// zero, is one second, so that a cancellation reaches a heartbeating
	// activity without a heartbeat timeout within about a second. When
	// neither MaxConcurrentWorkflowTaskPollers nor
	// WorkflowTaskPollerBehavior is set, the workflow task pollers scale
	// with the load (worker.NewPollerBehaviorAutoscaling with its
	// defaults) instead of the SDK's fixed two: every getRun query of a
	// polling client is a workflow task of the run's worker, and past
	// saturation two pollers left the worker behind its sticky queue
	// (throughput at 200 polling clients fell to 0.75 of that at 50; it
	// held at 1.06 with autoscaling).
	Worker worker.Options
	// Logger receives the worker's lifecycle messages (nil: none).
	Logger log.Logger
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
// keeps the publication while it runs, and withdraws it when it stops.
//
// It returns nil when ctx ends, and the error otherwise: a worker that
// cannot start, a conflicting publication, or a fatal worker error.
func (r *Registry) Run(ctx context.Context, c client.Client, taskQueue string, opts WorkerOptions) error {
	if taskQueue == "" {
		return errors.New("run worker: a task queue is required")
	}
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
	w := worker.New(c, taskQueue, opts.Worker)
	r.Register(w)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker on task queue %q: %w", taskQueue, err)
	}
	defer w.Stop()

	pub := r.Publication(taskQueue, opts.Worker.Identity)
	if err := catalog.Publish(ctx, c, pub); err != nil {
		return err
	}
	defer func() {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := catalog.Withdraw(wctx, c, taskQueue, pub.Identity); err != nil && opts.Logger != nil {
			opts.Logger.Warn("Could not withdraw the tool publication", "error", err)
		}
	}()
	if opts.Logger != nil {
		opts.Logger.Info("Worker ready; tools published", "taskQueue", taskQueue, "identity", pub.Identity, "tools", len(pub.Tools))
	}

	tick := time.NewTicker(opts.CheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-fatal:
			return fmt.Errorf("worker on task queue %q: %w", taskQueue, err)
		case <-tick.C:
			ok, err := catalog.Published(ctx, c, pub)
			if err == nil && !ok {
				err = catalog.Publish(ctx, c, pub)
				if err == nil && opts.Logger != nil {
					opts.Logger.Info("Tool publication was gone; published again", "taskQueue", taskQueue)
				}
			}
			if err != nil && ctx.Err() == nil && opts.Logger != nil {
				opts.Logger.Warn("Could not check the tool publication", "error", err)
			}
		}
	}
}
