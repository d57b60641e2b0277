package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/datadir"
	"github.com/openwop/temporal-mcp/internal/httpgate"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/telemetry/export"
)

// ServiceName is the service.name of the server's spans unless
// OTEL_SERVICE_NAME names another.
const ServiceName = "openwop-temporal-mcp"

// Timeouts of the process lifecycle.
const (
	// StartTimeout bounds the embedded server start and the first dial.
	StartTimeout = 2 * time.Minute
	// ReadyTimeout bounds the wait for the in-process worker's readiness
	// (Parts.WorkerReady) before the process reports ready anyway.
	ReadyTimeout = 10 * time.Second
	// ShutdownTimeout bounds the graceful shutdown in Run.
	ShutdownTimeout = 15 * time.Second
	// InProcessWorkerStopTimeout is how long the server's in-process
	// worker, once stopping, lets its activities in flight finish before
	// it cancels them: within ShutdownTimeout, with room for the HTTP
	// drain before it and the embedded server's stop after it. An
	// activity cut short is retried by Temporal once a worker is back.
	InProcessWorkerStopTimeout = 10 * time.Second
)

// App is a started process: Temporal connection, worker, HTTP listener.
type App struct {
	Deps
	// HTTPAddr is the address the HTTP listener is bound to.
	HTTPAddr string
	// TemporalAddress is the Temporal frontend host:port.
	TemporalAddress string
	// Embedded reports whether Temporal runs in this process (at Start).
	Embedded bool
	// UIURL is the embedded Web UI's URL ("" when not served).
	UIURL string
	// DBFile is the embedded server's SQLite file ("" when remote or
	// shared).
	DBFile string
	// MetricsAddr is the address the Prometheus endpoint is bound to (""
	// when metrics are off).
	MetricsAddr string
	// SharedFrom, when the data directory was held by another process at
	// Start (Config.ShareDataDir), is that process: this one uses its
	// Temporal server, and runs the server itself once it exits.
	SharedFrom *datadir.Holder

	srvMu      sync.Mutex
	server     embeddedServer // guarded by srvMu
	lock       *datadir.Lock  // guarded by srvMu
	tookOver   chan struct{}  // closed once this process runs the server of a shared directory
	stopWatch  context.CancelFunc
	watchDone  chan struct{}
	http       *http.Server
	metrics    *export.MetricsServer
	failed     chan error // a failed listener, worker or takeover
	stopWorker context.CancelFunc
	workerDone chan struct{}

	unserved func(ctx context.Context) ([]runs.Unserved, error)
	issuers  func() map[string]string

	saMu      sync.Mutex
	saErr     error // the last search attribute check; nil when they exist
	saChecked time.Time
}

// Run starts the process, logs where everything listens, and runs until
// ctx is done (cmd/server cancels it on SIGINT/SIGTERM), the HTTP listener
// fails or the in-process worker fails; then it shuts down gracefully. It
// returns the failure, nil after ctx ended.
func Run(ctx context.Context, cfg config.Config, logger *zap.Logger, parts Parts) error {
	a, err := Start(ctx, cfg, logger, parts)
	if err != nil {
		return err
	}
	var failure error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case failure = <-a.Failed():
		logger.Error("shutting down after a failure", zap.Error(failure))
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	return errors.Join(failure, a.Shutdown(sctx))
}

// Start connects to Temporal (starting the embedded server unless
// cfg.Remote), ensures the run search attributes (a failure is logged, and
// reported by /healthz), builds the handler, starts the worker and the HTTP
// listener, waits for the worker to be ready, and returns. Call Shutdown to
// stop them; receive from Failed to learn of a later failure.
func Start(ctx context.Context, cfg config.Config, logger *zap.Logger, parts Parts) (a *App, err error) {
	a = &App{Deps: Deps{Logger: logger, TaskQueue: cfg.TaskQueue, Namespace: cfg.Namespace(),
		DeploymentName: cfg.DeploymentName, BuildID: cfg.BuildID},
		failed: make(chan error, 3), tookOver: make(chan struct{}), unserved: parts.Unserved,
		issuers: parts.Unreachable}
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
			defer cancel()
			_ = a.Shutdown(sctx)
			a = nil
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()

	if err := a.startTelemetry(sctx, cfg, parts.Telemetry); err != nil {
		return a, err
	}
	if err := a.connect(sctx, cfg); err != nil {
		return a, err
	}
	a.checkSearchAttributes(sctx)

	gate, err := httpgate.New(httpgate.Options{PublicURL: cfg.PublicURL, AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins})
	if err != nil {
		return a, fmt.Errorf("%s: %w", config.EnvPublicURL, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", localGate(gate, http.HandlerFunc(a.healthz)))
	if parts.Handler != nil {
		h, err := parts.Handler(a.Deps)
		if err != nil {
			return a, fmt.Errorf("build HTTP handler: %w", err)
		}
		mux.Handle("/", h)
	}
	worker := cfg.Worker && parts.Worker != nil
	if worker {
		a.startWorker(parts.Worker)
	}
	// Bind now (a busy address fails at once), serve once the worker is
	// ready: a client that reaches the server then finds its tools.
	tl, err := (&net.ListenConfig{}).Listen(sctx, "tcp", cfg.HTTPAddr)
	if err != nil {
		return a, fmt.Errorf("HTTP listener (%s): %w", config.EnvHTTPAddr, err)
	}
	limits := limitsOf(cfg)
	l := newLimitListener(tl, limits.MaxConns)
	a.HTTPAddr = l.Addr().String()
	if worker && parts.WorkerReady != nil {
		if err := a.waitWorker(sctx, parts.WorkerReady); err != nil {
			_ = l.Close()
			return a, err
		}
	}
	srv := newHTTPServer(mux, limits, logger)
	if parts.OnShutdown != nil {
		srv.RegisterOnShutdown(parts.OnShutdown)
	}
	a.http = srv
	go func() {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			a.failed <- fmt.Errorf("HTTP listener: %w", err)
		}
	}()

	a.logReady(cfg, worker)
	if cfg.Worker && parts.Worker == nil {
		logger.Warn("no in-process worker: nothing to run")
	}
	return a, nil
}

// startTelemetry sets the process's telemetry: tel, or when nil the one
// the configuration asks for (Config.Tracing, Config.MetricsAddr); and
// serves the metrics endpoint when cfg.MetricsAddr is set.
func (a *App) startTelemetry(ctx context.Context, cfg config.Config, tel *export.Telemetry) error {
	var err error
	if a.Telemetry = tel; a.Telemetry == nil {
		a.Telemetry, err = export.New(ctx, export.Options{
			ServiceName: ServiceName, Tracing: cfg.Tracing, Metrics: cfg.MetricsAddr != "", Logger: a.Logger.Named("telemetry"),
		})
		if err != nil {
			return fmt.Errorf("telemetry (OTEL_* variables): %w", err)
		}
	}
	if m := a.Telemetry.Metrics(); m != nil && cfg.MetricsAddr != "" {
		if a.metrics, err = export.ServeMetrics(ctx, cfg.MetricsAddr, m, a.Logger.Named("metrics")); err != nil {
			return fmt.Errorf("%s: %w", config.EnvMetricsAddr, err)
		}
		a.MetricsAddr = a.metrics.Addr()
	}
	return nil
}

// logReady logs where everything listens (and a warning when links in
// responses will name the address a connection arrived on).
func (a *App) logReady(cfg config.Config, worker bool) {
	if cfg.PublicURL == "" && !loopbackAddr(a.HTTPAddr) {
		a.Logger.Warn("the HTTP listener is not on a loopback address and "+config.EnvPublicURL+" is not set: "+
			"links in responses name the address each connection arrived on; set "+config.EnvPublicURL+
			" to the URL clients use", zap.String("http", a.HTTPAddr))
	}
	fields := []zap.Field{
		zap.String("http", "http://"+a.HTTPAddr),
		zap.String("temporal", a.TemporalAddress),
		zap.String("namespace", a.Namespace),
		zap.String("task_queue", a.TaskQueue),
		zap.Bool("worker", worker),
		zap.Bool("embedded_temporal", a.Embedded),
	}
	if a.Embedded {
		fields = append(fields, zap.String("temporal_ui", a.UIURL), zap.String("data", a.DBFile))
	}
	if a.MetricsAddr != "" {
		fields = append(fields, zap.String("metrics", "http://"+a.MetricsAddr+"/metrics"))
	}
	fields = append(fields, zap.Bool("tracing", a.Telemetry.TracerProvider() != nil))
	if a.SharedFrom != nil {
		fields = append(fields, zap.Int("temporal_of_pid", a.SharedFrom.PID), zap.String("temporal_ui", a.SharedFrom.UIURL))
	}
	a.Logger.Info("openwop server ready", fields...)
}

// Failed delivers the first failure of the running process: the HTTP
// listener's, the in-process worker's, or a failed takeover of a shared
// data directory.
func (a *App) Failed() <-chan error { return a.failed }

// TookOver is closed once this process, which used the Temporal server of
// the process holding its data directory (SharedFrom), runs the server
// itself because that process exited.
func (a *App) TookOver() <-chan struct{} { return a.tookOver }

// startWorker runs the worker until Shutdown; its failure goes to Failed.
func (a *App) startWorker(run func(context.Context, Deps) error) {
	ctx, cancel := context.WithCancel(context.Background())
	a.stopWorker, a.workerDone = cancel, make(chan struct{})
	go func() {
		defer close(a.workerDone)
		err := run(ctx, a.Deps)
		if ctx.Err() != nil {
			return // stopped by Shutdown
		}
		if err == nil {
			err = errors.New("stopped")
		}
		a.failed <- fmt.Errorf("in-process worker on task queue %q: %w", a.TaskQueue, err)
	}()
}

// readyPoll is the interval of the WorkerReady polls.
const readyPoll = 200 * time.Millisecond

// waitWorker polls ready until it reports true, the worker fails (an
// error) or ReadyTimeout passes (a warning).
func (a *App) waitWorker(ctx context.Context, ready func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	var last error
	// The first checks come soon (a stdio client waits for them), later
	// ones every readyPoll.
	for pause := readyPoll / 8; ; pause = min(2*pause, readyPoll) {
		ok, err := ready(ctx)
		if ok && err == nil {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case err := <-a.failed:
			return err
		case <-ctx.Done():
			a.Logger.Warn("the in-process worker is not serving yet; going on", zap.Duration("waited", ReadyTimeout), zap.NamedError("last_error", last))
			return nil
		case <-time.After(pause):
		}
	}
}

// Shutdown stops the HTTP listener (waiting for requests until ctx ends),
// the worker, the client and the embedded server, in that order, and then
// releases the data directory.
func (a *App) Shutdown(ctx context.Context) error {
	var errs []error
	if a.http != nil {
		if err := a.http.Shutdown(ctx); err != nil {
			_ = a.http.Close()
			errs = append(errs, fmt.Errorf("HTTP shutdown: %w", err))
		}
		a.http = nil
	}
	if a.stopWorker != nil {
		a.stopWorker()
		select {
		case <-a.workerDone:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("in-process worker did not stop: %w", ctx.Err()))
		}
		a.stopWorker = nil
	}
	if a.stopWatch != nil {
		a.stopWatch()
		<-a.watchDone // a takeover in progress stops with ctx
		a.stopWatch = nil
	}
	if a.Client != nil {
		a.Client.Close()
		a.Client = nil
	}
	a.srvMu.Lock()
	defer a.srvMu.Unlock()
	if a.server != nil {
		if err := a.server.Stop(); err != nil {
			errs = append(errs, err)
		}
		a.server = nil
	}
	if a.metrics != nil {
		if err := a.metrics.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("metrics listener shutdown: %w", err))
		}
		a.metrics = nil
	}
	if a.Telemetry != nil {
		if err := a.Telemetry.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		a.Telemetry = nil
	}
	// The database is closed: another process may open it now.
	if err := a.lock.Release(); err != nil {
		errs = append(errs, err)
	}
	a.lock = nil
	return errors.Join(errs...)
}
