// Command worker runs only the worker of the tool workflows and activities.
// It connects by the standard Temporal environment (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE,
// TEMPORAL_CONFIG_FILE); with none set it dials localhost:7233, where
// `go run ./cmd/server` embeds its Temporal server.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"go.temporal.io/sdk/contrib/envconfig"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/exampletools"
)

func main() {
	if err := run(); err != nil {
		os.Exit(1)
	}
}

// run runs the command; it reports its error itself (logged, or on stderr
// before the logger exists).
func run() error {
	var logger *zap.Logger
	cfg, err := app.LoadConfig(envconfig.EnvLookupOS)
	if err == nil {
		logger, err = app.NewLogger(cfg.LogFormat, cfg.LogLevel)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return err
	}
	defer func() { _ = logger.Sync() }()

	acts := activities.New(logger.Named("activities"), activities.Options{
		OutputDir: filepath.Join(cfg.DataDir, "reports"),
	})
	tools, err := exampletools.DefaultRegistry(acts, cfg.Fixtures)
	if err != nil {
		logger.Error("tool registry", zap.Error(err))
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.RunWorker(ctx, cfg, logger, tools.Register); err != nil {
		logger.Error("worker stopped", zap.Error(err))
		return err
	}
	return nil
}
