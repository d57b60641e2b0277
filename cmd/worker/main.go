package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/telemetry/export"
	"github.com/openwop/temporal-mcp/workflows"
)

// serviceName is the service.name of the worker's spans unless
// OTEL_SERVICE_NAME names another.
const serviceName = "openwop-worker"

func main() {
	if err := run(); err != nil {
		os.Exit(1)
	}
}

// run runs the command; it reports its error itself (logged, or on stderr
// before the logger exists).
func run() error {
	flag.Usage = func() {
		config.Usage(flag.CommandLine.Output(), "Command worker runs the example tool workflows on a task queue and publishes them to the tool catalog in Temporal.",
			flag.CommandLine, config.WorkerEnv())
	}
	flag.Parse()
	var logger *zap.Logger
	cfg, err := config.LoadConfig(envconfig.EnvLookupOS)
	if err == nil {
		logger, err = config.NewLogger(cfg.LogFormat, cfg.LogLevel)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker: invalid configuration:", err)
		return err
	}
	defer func() { _ = logger.Sync() }()
	fail := func(msg string, err error) error {
		logger.Error(msg, zap.Error(err))
		return err
	}

	acts := tools.NewActivities(logger.Named("activities"), tools.ActivityOptions{
		OutputDir: filepath.Join(cfg.DataDir, "reports"),
	})
	reg, err := tools.DefaultRegistry(acts, cfg.Fixtures)
	if err != nil {
		return fail("tool registry", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tel, err := export.New(ctx, export.Options{
		ServiceName: serviceName, Env: os.LookupEnv, Metrics: cfg.MetricsAddr != "", Logger: logger.Named("telemetry"),
	})
	if err != nil {
		return fail("telemetry (OTEL_* variables)", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			logger.Warn("telemetry shutdown", zap.Error(err))
		}
	}()
	if m := tel.Metrics(); m != nil {
		ms, err := export.ServeMetrics(ctx, cfg.MetricsAddr, m, logger.Named("metrics"))
		if err != nil {
			return fail("worker not started: "+config.EnvMetricsAddr, err)
		}
		defer func() { _ = ms.Shutdown(context.Background()) }()
		logger.Info("metrics served", zap.String("metrics", "http://"+ms.Addr()+"/metrics"))
	}
	c, err := cfg.Dial(ctx, logger, tel)
	if err != nil {
		return fail("worker not started", err)
	}
	defer c.Close()
	if err := runs.EnsureSearchAttributes(ctx, c, cfg.Namespace()); err != nil {
		// The worker can serve without them, but no run can start until
		// they exist; the server's /healthz reports it as well.
		config.LogSearchAttributes(logger, err)
	}
	logger.Info("openwop worker starting",
		zap.String("temporal", cfg.HostPort()),
		zap.String("namespace", cfg.Namespace()),
		zap.String("task_queue", cfg.TaskQueue),
		zap.Int("tools", len(reg.Specs())))
	err = reg.Run(ctx, c, cfg.TaskQueue, workflows.WorkerOptions{
		Worker: worker.Options{},
		Logger: config.SDKLogger(logger.Named("worker")),
	})
	if err != nil {
		return fail("worker stopped", err)
	}
	logger.Info("worker stopped")
	return nil
}
