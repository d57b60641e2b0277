package toolworker

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/upstream"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/telemetry/export"
	"github.com/openwop/temporal-mcp/workflows"
)

// ServiceName is the service.name of the worker's spans unless
// OTEL_SERVICE_NAME names another.
const ServiceName = "openwop-worker"

// telemetryShutdown bounds the flush of the worker's telemetry on exit.
const telemetryShutdown = 5 * time.Second

// upstreamConnectTimeout bounds the connection to the upstream MCP
// servers (and the listing of their tools) at start.
const upstreamConnectTimeout = 30 * time.Second

// Registry returns the registry of the example tools (examples/tools), with
// the conformance fixtures (internal/testing/conformancetools) when
// cfg.Fixtures is set, and their activities logging to logger and
// publishing reports in cfg.ReportsDir(). When cfg names a file of
// upstream MCP servers and cfg.Worker is set, it connects to them and
// serves their tools as the registry's tool set (internal/upstream,
// workflows.Registry.WithToolSet), which follows the upstreams while the
// worker runs; closeUpstreams ends those connections (it does nothing
// otherwise).
func Registry(ctx context.Context, cfg config.Config, logger *zap.Logger) (reg *workflows.Registry, closeUpstreams func() error, err error) {
	acts := tools.NewActivities(logger.Named("activities"), tools.ActivityOptions{
		OutputDir: cfg.ReportsDir(),
	})
	all := tools.ExampleTools()
	if cfg.Fixtures {
		all = append(all, conformancetools.Tools()...)
	}
	registered := []any{acts}
	closeUpstreams = func() error { return nil }
	var upstreams *upstream.Set
	if cfg.UpstreamsFile != "" && cfg.Worker {
		cctx, cancel := context.WithTimeout(ctx, upstreamConnectTimeout)
		defer cancel()
		set, err := upstream.Connect(cctx, cfg.Upstreams, upstream.Options{Logger: logger.Named("upstream"), Version: BinaryChecksum(), Environ: os.Environ()})
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w", config.EnvUpstreamsFile, cfg.UpstreamsFile, err)
		}
		registered = append(registered, set.Activities())
		closeUpstreams, upstreams = set.Close, set
	}
	reg, err = workflows.NewRegistry(all, registered...)
	if err != nil {
		_ = closeUpstreams()
		return nil, nil, err
	}
	if upstreams != nil {
		reg = reg.WithToolSet(upstreams)
	}
	return reg, closeUpstreams, nil
}

// Serve runs a worker of reg's tools on cfg.TaskQueue, through c, until
// ctx is done (then it returns nil) or the worker fails: a version of the
// Worker Deployment cfg names, or an unversioned worker. Once ctx is done
// the worker lets the activities in flight finish for at most stop
// (workflows.DefaultWorkerStopTimeout when zero), then cancels them.
func Serve(ctx context.Context, reg *workflows.Registry, c client.Client, cfg config.Config, logger *zap.Logger, stop time.Duration) error {
	return reg.Run(ctx, c, cfg.TaskQueue, workflows.WorkerOptions{
		Worker:         worker.Options{WorkerStopTimeout: stop},
		Logger:         config.SDKLogger(logger.Named("worker")),
		DeploymentName: cfg.DeploymentName,
		BuildID:        cfg.BuildID,
	})
}

// Summary is cmd/worker's line of -h.
const Summary = "Command worker runs the example tool workflows on a task queue and publishes them to the tool catalog in Temporal."

// Main is cmd/worker once its command line is parsed: it reads and checks
// the configuration, and runs the worker until SIGINT or SIGTERM. It
// reports its error itself (logged, or on stderr before the logger exists).
func Main() error {
	IdentifyBinary() // before any worker starts; process-wide
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Worker = true // the process is the worker: OPENWOP_WORKER is the server's
	reg, closeUpstreams, err := Registry(ctx, cfg, logger)
	if err != nil {
		return fail("tool registry", err)
	}
	defer func() { _ = closeUpstreams() }()
	return run(ctx, cfg, logger, reg, fail)
}

// run runs the worker process until ctx is done; fail logs a failure with
// what failed and returns it.
func run(ctx context.Context, cfg config.Config, logger *zap.Logger, reg *workflows.Registry, fail func(string, error) error) error {
	tel, err := export.New(ctx, export.Options{
		ServiceName: ServiceName, Tracing: cfg.Tracing, Metrics: cfg.MetricsAddr != "", Logger: logger.Named("telemetry"),
	})
	if err != nil {
		return fail("telemetry (OTEL_* variables)", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), telemetryShutdown)
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
		zap.String("deployment", cfg.DeploymentName),
		zap.String("build_id", cfg.BuildID),
		zap.Int("tools", len(reg.Specs())))
	if err := Serve(ctx, reg, c, cfg, logger, 0); err != nil {
		return fail("worker stopped", err)
	}
	logger.Info("worker stopped")
	return nil
}
