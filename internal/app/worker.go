package app

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/devtemporal"
)

// RunWorker connects to Temporal with cfg.Client (the TEMPORAL_* variables;
// with none set, the server cmd/server embeds on localhost:7233) and runs a
// worker on cfg.TaskQueue with what register registers, until ctx is done.
func RunWorker(ctx context.Context, cfg Config, logger *zap.Logger, register func(worker.Registry)) error {
	if register == nil {
		return errors.New("worker: nothing to register")
	}
	opts := cfg.Client
	opts.Logger = devtemporal.SDKLogger(logger)
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	dctx, cancel := context.WithTimeout(ctx, StartTimeout)
	c, err := client.DialContext(dctx, opts)
	cancel()
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", hostPort(opts), err)
	}
	defer c.Close()

	w := worker.New(c, cfg.TaskQueue, worker.Options{})
	register(w)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker on task queue %q: %w", cfg.TaskQueue, err)
	}
	logger.Info("openwop worker ready",
		zap.String("temporal", hostPort(opts)),
		zap.String("namespace", opts.Namespace),
		zap.String("task_queue", cfg.TaskQueue))
	<-ctx.Done()
	logger.Info("shutting down")
	w.Stop()
	return nil
}
