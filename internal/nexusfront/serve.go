package nexusfront

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/runs"
)

// DefaultRecheck is how often Serve reads the catalog for tools published
// or withdrawn since, when ServeOptions.Recheck is zero.
const DefaultRecheck = 10 * time.Second

// ServeOptions configure Serve.
type ServeOptions struct {
	Options
	// TaskQueue is the task queue the Nexus endpoint targets.
	TaskQueue string
	// Recheck is how often the catalog is read again. Default
	// DefaultRecheck.
	Recheck time.Duration
	// Logger logs the service's changes. Default none.
	Logger *zap.Logger
}

// Serve runs a worker of the tools' Nexus service on opts.TaskQueue,
// through c, until ctx is done (then it returns nil). It follows the
// catalog: every opts.Recheck it lists the tools again and, when the set
// of names changed, replaces its worker with one whose service has an
// operation per tool listed now, so a tool published later is callable
// within about that time and a withdrawn one is no longer an operation.
// While the worker is replaced no task is polled; callers' Nexus requests
// wait or are retried by Temporal.
func Serve(ctx context.Context, c client.Client, tools catalog.Source, backend runs.Backend, opts ServeOptions) error {
	log := cmp.Or(opts.Logger, zap.NewNop())
	var (
		w      worker.Worker
		served []string
	)
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	for {
		names, err := toolNames(ctx, tools)
		switch {
		case err != nil:
			log.Warn("Nexus service: the catalog could not be read; serving the operations as they were", zap.Error(err))
		case w == nil || !slices.Equal(names, served):
			next, err := startWorker(ctx, c, tools, backend, opts)
			if err != nil {
				return err
			}
			if w != nil {
				w.Stop()
			}
			w, served = next, names
			log.Info("Nexus service serving", zap.String("taskQueue", opts.TaskQueue), zap.Strings("operations", names))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(cmp.Or(opts.Recheck, DefaultRecheck)):
		}
	}
}

// startWorker starts a worker of the service of the tools listed now.
func startWorker(ctx context.Context, c client.Client, tools catalog.Source, backend runs.Backend, opts ServeOptions) (worker.Worker, error) {
	svc, err := NewService(ctx, tools, backend, opts.Options)
	if err != nil {
		return nil, err
	}
	w := worker.New(c, opts.TaskQueue, worker.Options{})
	w.RegisterNexusService(svc)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("nexusfront: start the service's worker on task queue %q: %w", opts.TaskQueue, err)
	}
	return w, nil
}

// toolNames are the names of the tools tools lists, sorted.
func toolNames(ctx context.Context, tools catalog.Source) ([]string, error) {
	list, err := tools.Tools(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list))
	for _, t := range list {
		names = append(names, t.Name())
	}
	slices.Sort(names)
	return names, nil
}
