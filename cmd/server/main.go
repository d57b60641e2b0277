// Command server runs the OpenWOP Temporal MCP adapter.
//
// With no TEMPORAL_ADDRESS (nor TEMPORAL_PROFILE / TEMPORAL_CONFIG_FILE) it
// runs everything in one process: an embedded Temporal server persisted in
// ./data/temporal.db, the Temporal Web UI on 127.0.0.1:8233, a worker for
// the tool workflows and the HTTP listener on 127.0.0.1:8080. With
// TEMPORAL_ADDRESS set it embeds nothing and connects there (still running
// its worker unless OPENWOP_WORKER=off). See the README for every variable.
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
	"github.com/openwop/temporal-mcp/workflows"
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
		fmt.Fprintln(os.Stderr, "server:", err)
		return err
	}
	defer func() { _ = logger.Sync() }()

	acts := activities.New(logger.Named("activities"), activities.Options{
		OutputDir: filepath.Join(cfg.DataDir, "reports"),
	})
	tools, err := workflows.DefaultRegistry(acts, cfg.Fixtures)
	if err != nil {
		logger.Error("tool registry", zap.Error(err))
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = app.Run(ctx, cfg, logger, app.Parts{
		Register: tools.Register,
		// TODO(lead): mount the MCP handler at /mcp, OpenWOP discovery at
		// /.well-known/openwop and the REST API at /runs, built from deps
		// (logger, Temporal client, namespace, task queue) and tools.Specs().
		Handler: nil,
	})
	if err != nil {
		logger.Error("server stopped", zap.Error(err))
	}
	return err
}
