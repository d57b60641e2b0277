package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/datadir"
	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/httpgate"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/telemetry/export"
)

// Timeouts of the process lifecycle.
const (
	// StartTimeout bounds the embedded server start and the first dial.
	StartTimeout = 2 * time.Minute
	// ReadyTimeout bounds the wait for the in-process worker's readiness
	// (Parts.WorkerReady) before the process reports ready anyway.
	ReadyTimeout = 10 * time.Second
	// ShutdownTimeout bounds the graceful shutdown in Run.
	ShutdownTimeout = 15 * time.Second
	// healthTimeout bounds the Temporal checks of /healthz.
	healthTimeout = 3 * time.Second
	// recheckAfter is how often /healthz checks the search attributes
	// again while they are missing.
	recheckAfter = 5 * time.Second
	// readyPoll is the interval of the WorkerReady polls.
	readyPoll = 200 * time.Millisecond
)

// ServiceName is the service.name of the server's spans unless
// OTEL_SERVICE_NAME names another.
const ServiceName = "openwop-temporal-mcp"

// Deps are what the handler and the worker are built from.
type Deps struct {
	// Logger is the process logger.
	Logger *zap.Logger
	// Client is connected to Namespace. App owns it: do not close it.
	Client client.Client
	// Namespace is the Temporal namespace runs live in.
	Namespace string
	// TaskQueue is the task queue of the in-process worker.
	TaskQueue string
	// Telemetry is the process's tracing and metrics (each possibly off;
	// see package telemetry). Client already uses it.
	Telemetry *export.Telemetry
}

// Parts are the adapter-specific pieces App runs.
type Parts struct {
	// Handler builds the HTTP handler mounted at "/". nil serves only
	// /healthz.
	Handler func(Deps) (http.Handler, error)
	// Worker runs the in-process worker until ctx is done (then it returns
	// nil) or it fails; a failure ends the process. nil (or Config.Worker
	// false) runs no worker.
	Worker func(ctx context.Context, d Deps) error
	// WorkerReady, when set, reports whether the in-process worker is
	// serving (e.g. its tools are in the catalog). Start polls it, for at
	// most ReadyTimeout, before it reports the process ready.
	WorkerReady func(ctx context.Context) (bool, error)
	// OnShutdown, when set, runs as the HTTP server starts shutting down
	// (http.Server.RegisterOnShutdown), e.g. to end streams that would
	// otherwise hold the shutdown until its timeout.
	OnShutdown func()
	// Telemetry, when set, is used instead of the one Start builds from
	// the configuration (Config.Tracing, Config.MetricsAddr). Shutdown
	// shuts it down.
	Telemetry *export.Telemetry
	// Unserved, when set, names the task queues that no worker serves now
	// (runs.Service.UnservedQueues); /healthz then reports "degraded",
	// naming them. It is called only after Handler.
	Unserved func(ctx context.Context) ([]string, error)
}

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
	server     *devtemporal.Server // guarded by srvMu
	lock       *datadir.Lock       // guarded by srvMu
	tookOver   chan struct{}       // closed once this process runs the server of a shared directory
	stopWatch  context.CancelFunc
	watchDone  chan struct{}
	http       *http.Server
	metrics    *export.MetricsServer
	failed     chan error // a failed listener, worker or takeover
	stopWorker context.CancelFunc
	workerDone chan struct{}

	unserved func(ctx context.Context) ([]string, error)

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
	a = &App{Deps: Deps{Logger: logger, TaskQueue: cfg.TaskQueue, Namespace: cfg.Namespace()},
		failed: make(chan error, 3), tookOver: make(chan struct{}), unserved: parts.Unserved}
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

	if a.Telemetry = parts.Telemetry; a.Telemetry == nil {
		env := func(string) (string, bool) { return "", false }
		if cfg.Tracing.Enabled {
			env = os.LookupEnv
		}
		a.Telemetry, err = export.New(sctx, export.Options{
			ServiceName: ServiceName, Env: env, Metrics: cfg.MetricsAddr != "", Logger: logger.Named("telemetry"),
		})
		if err != nil {
			return a, fmt.Errorf("telemetry (OTEL_* variables): %w", err)
		}
	}
	if m := a.Telemetry.Metrics(); m != nil && cfg.MetricsAddr != "" {
		if a.metrics, err = export.ServeMetrics(sctx, cfg.MetricsAddr, m, logger.Named("metrics")); err != nil {
			return a, fmt.Errorf("%s: %w", config.EnvMetricsAddr, err)
		}
		a.MetricsAddr = a.metrics.Addr()
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

	if cfg.PublicURL == "" && !loopbackAddr(a.HTTPAddr) {
		logger.Warn("the HTTP listener is not on a loopback address and "+config.EnvPublicURL+" is not set: "+
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
	logger.Info("openwop server ready", fields...)
	if cfg.Worker && parts.Worker == nil {
		logger.Warn("no in-process worker: nothing to run")
	}
	return a, nil
}

// Failed delivers the first failure of the running process: the HTTP
// listener's, the in-process worker's, or a failed takeover of a shared
// data directory.
func (a *App) Failed() <-chan error { return a.failed }

// TookOver is closed once this process, which used the Temporal server of
// the process holding its data directory (SharedFrom), runs the server
// itself because that process exited.
func (a *App) TookOver() <-chan struct{} { return a.tookOver }

// holderWait bounds the wait for the holder of the data directory to
// publish its server when this process only reports it (no ShareDataDir).
const holderWait = 10 * time.Second

// connect starts the embedded server (unless remote) and dials the client.
// The data directory is locked first (internal/app/datadir): when another
// process holds it, this one uses that process's server with
// cfg.ShareDataDir, and fails naming it otherwise.
func (a *App) connect(ctx context.Context, cfg config.Config) error {
	if !cfg.Remote {
		cctx := ctx
		if !cfg.ShareDataDir {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(ctx, holderWait)
			defer cancel()
		}
		lock, err := datadir.Claim(cctx, cfg.DataDir)
		var held *datadir.HeldError
		switch {
		case errors.As(err, &held) && cfg.ShareDataDir && held.Holder.TemporalAddress != "":
			if held.Holder.Namespace != cfg.Namespace() {
				return fmt.Errorf("%w; its namespace is not %s (%s)", err, cfg.Namespace(), config.EnvTemporalNamespace)
			}
			h := held.Holder
			a.SharedFrom = &h
			a.Logger.Info("the data directory is in use by another process: using its Temporal server",
				zap.String("data", held.Dir), zap.Int("pid", h.PID), zap.String("temporal", h.TemporalAddress))
			cfg.Client = client.Options{HostPort: h.TemporalAddress, Namespace: h.Namespace}
		case held != nil:
			msg := fmt.Sprintf("stop it, or set %s to another directory", config.EnvDataDir)
			if held.Holder.TemporalAddress != "" {
				msg += fmt.Sprintf(", or set %s=%s to use its server", config.EnvTemporalAddress, held.Holder.TemporalAddress)
			}
			return fmt.Errorf("%w: %s", err, msg)
		case err != nil:
			return err
		default:
			srv, err := a.startEmbedded(ctx, cfg, lock, cfg.TemporalPort)
			if err != nil {
				_ = lock.Release()
				return err
			}
			a.server, a.lock, a.Embedded = srv, lock, true
			a.UIURL, a.DBFile = srv.UIURL(), srv.DBFile()
			cfg.Client = client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()}
		}
	}
	c, err := cfg.Dial(ctx, a.Logger, a.Telemetry)
	if err != nil {
		return err
	}
	a.Client, a.TemporalAddress = c, cfg.HostPort()
	if a.SharedFrom != nil {
		a.watchHolder(cfg)
	}
	return nil
}

// embedded reports whether the Temporal server runs in this process now.
func (a *App) embedded() bool {
	a.srvMu.Lock()
	defer a.srvMu.Unlock()
	return a.server != nil
}

// startEmbedded starts the embedded server on the locked data directory,
// its frontend on port (0: a free one), and publishes it in the directory.
func (a *App) startEmbedded(ctx context.Context, cfg config.Config, lock *datadir.Lock, port int) (*devtemporal.Server, error) {
	level := cfg.TemporalLogLevel
	uiPort := 0 // no UI
	if cfg.UI {
		var err error
		if uiPort, err = pickUIPort(cfg.UIPort); err != nil {
			return nil, err
		}
	}
	srv, err := devtemporal.Start(ctx, devtemporal.Options{
		DBFile:    filepath.Join(lock.Dir(), config.DBFileName),
		Port:      port,
		Namespace: cfg.Namespace(),
		Logger:    a.Logger.Named("temporal-server"),
		LogLevel:  &level,
		UIPort:    uiPort,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded Temporal server (ports: %s, %s; 0 = any free port): %w",
			config.EnvTemporalPort, config.EnvUIPort, err)
	}
	if err := lock.Publish(datadir.Holder{TemporalAddress: srv.Address(), Namespace: srv.Namespace(), UIURL: srv.UIURL()}); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	return srv, nil
}

// watchHolder waits, until Shutdown, for the process whose server this one
// uses (SharedFrom) to release the data directory, and then runs the
// embedded server on it, its frontend on the same address, so that the
// client (and everything built on it) reconnects to it. A failure to do so
// goes to Failed.
func (a *App) watchHolder(cfg config.Config) {
	ctx, cancel := context.WithCancel(context.Background())
	a.stopWatch, a.watchDone = cancel, make(chan struct{})
	prev := *a.SharedFrom
	go func() {
		defer close(a.watchDone)
		fail := func(err error) {
			if ctx.Err() == nil {
				a.failed <- fmt.Errorf("take over the data directory after process %d exited: %w", prev.PID, err)
			}
		}
		lock, err := datadir.Watch(ctx, cfg.DataDir)
		if err != nil {
			fail(err)
			return
		}
		a.Logger.Warn("the process whose Temporal server this one used exited: running the embedded server here",
			zap.Int("pid", prev.PID), zap.String("temporal", prev.TemporalAddress), zap.String("data", lock.Dir()))
		_, p, err := net.SplitHostPort(prev.TemporalAddress)
		port, perr := strconv.Atoi(p)
		if err != nil || perr != nil {
			_ = lock.Release()
			fail(fmt.Errorf("the holder's address %q: want 127.0.0.1:port", prev.TemporalAddress))
			return
		}
		sctx, scancel := context.WithTimeout(ctx, StartTimeout)
		defer scancel()
		srv, err := a.startEmbedded(sctx, cfg, lock, port)
		if err != nil {
			_ = lock.Release()
			fail(err)
			return
		}
		a.srvMu.Lock()
		a.server, a.lock = srv, lock
		a.srvMu.Unlock()
		close(a.tookOver)
		a.Logger.Info("embedded Temporal server running", zap.String("temporal", srv.Address()),
			zap.String("temporal_ui", srv.UIURL()), zap.String("data", srv.DBFile()))
	}()
}

// localGate applies the request gate (Host, Origin) to requests that
// arrived on a loopback address, where DNS rebinding reaches a local
// server; a probe on another address (a container orchestrator's, naming
// the pod's IP) passes whatever the configured hosts.
func localGate(g *httpgate.Gate, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if httpgate.LocalRequest(r) {
			if rej := g.CheckHostOrigin(r); rej != nil {
				b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": rej.Code, "message": rej.Message}})
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(rej.Status)
				_, _ = w.Write(b)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// pickUIPort returns port, or for 0 a free port on 127.0.0.1 (where the
// embedded Web UI listens).
func pickUIPort(port int) (int, error) {
	if port != 0 {
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("embedded Web UI: pick a free port (%s=0): %w", config.EnvUIPort, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// loopbackAddr reports whether the host of the host:port addr is a
// loopback address.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// checkSearchAttributes ensures the run search attributes and records the
// outcome for /healthz, logging a failure.
func (a *App) checkSearchAttributes(ctx context.Context) {
	err := runs.EnsureSearchAttributes(ctx, a.Client, a.Namespace)
	a.saMu.Lock()
	prev := a.saErr
	a.saErr, a.saChecked = err, time.Now()
	a.saMu.Unlock()
	switch {
	case err != nil && (prev == nil || prev.Error() != err.Error()):
		config.LogSearchAttributes(a.Logger, err)
	case err == nil && prev != nil:
		a.Logger.Info("the run search attributes exist now", zap.String("namespace", a.Namespace))
	}
}

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

// waitWorker polls ready until it reports true, the worker fails (an
// error) or ReadyTimeout passes (a warning).
func (a *App) waitWorker(ctx context.Context, ready func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	var last error
	for {
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
		case <-tick.C:
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

// Health is the body of GET /healthz.
type Health struct {
	// Status is "ok" (HTTP 200); "degraded" (HTTP 200) when no worker
	// serves some task queue; "unavailable" when Temporal does not answer,
	// or "unhealthy" when the namespace lacks the run search attributes
	// (both HTTP 503).
	Status   string         `json:"status"`
	Temporal TemporalHealth `json:"temporal"`
	// SearchAttributes is set when the run search attributes are missing.
	SearchAttributes *SearchAttributesHealth `json:"searchAttributes,omitempty"`
	// Workers is set when no worker serves some task queue.
	Workers *WorkersHealth `json:"workers,omitempty"`
}

// WorkersHealth names the task queues that no worker serves.
type WorkersHealth struct {
	// Unserved are the task queues, sorted.
	Unserved []string `json:"unserved"`
	// Message says what that means and what to do.
	Message string `json:"message"`
}

// TemporalHealth reports the Temporal connection.
type TemporalHealth struct {
	// Address is the frontend host:port.
	Address string `json:"address"`
	// Namespace is where runs live.
	Namespace string `json:"namespace"`
	// Embedded reports an in-process server.
	Embedded bool `json:"embedded"`
	// Reachable reports whether it answered the health check.
	Reachable bool `json:"reachable"`
	// Error is the failed check's error.
	Error string `json:"error,omitempty"`
}

// SearchAttributesHealth names the missing run search attributes and how
// to create them.
type SearchAttributesHealth struct {
	// Missing are the attributes the namespace lacks.
	Missing []string `json:"missing"`
	// Message says what is missing and gives the commands below.
	Message string `json:"message"`
	// Commands create them: the Temporal CLI's (self-hosted) and tcld's
	// (Temporal Cloud).
	Commands []string `json:"commands"`
}

func (a *App) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	h := Health{Status: "ok", Temporal: TemporalHealth{
		Address: a.TemporalAddress, Namespace: a.Namespace, Embedded: a.embedded(), Reachable: true,
	}}
	code := http.StatusOK
	if _, err := a.Client.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		h.Status, h.Temporal.Reachable, h.Temporal.Error = "unavailable", false, err.Error()
		code = http.StatusServiceUnavailable
	} else if missing := a.missingSearchAttributes(ctx); missing != nil {
		h.Status = "unhealthy"
		h.SearchAttributes = &SearchAttributesHealth{
			Missing: missing.Names, Message: missing.Error(),
			Commands: []string{missing.CreateCommand(), missing.CloudCommand()},
		}
		code = http.StatusServiceUnavailable
	} else if a.unserved != nil {
		queues, err := a.unserved(ctx)
		if err != nil {
			a.Logger.Debug("/healthz: check the task queues' workers", zap.Error(err))
		}
		if len(queues) > 0 {
			h.Status = "degraded"
			h.Workers = &WorkersHealth{Unserved: queues, Message: fmt.Sprintf(
				"no worker polls task queue(s) %s: their runs do not progress, and are read from the state they published "+
					"in Temporal; start a worker that serves them", strings.Join(queues, ", "))}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(h)
}

// missingSearchAttributes returns the recorded search attribute failure
// when it is a missing one, checking again first when the last check
// failed more than recheckAfter ago (an operator may have added them).
func (a *App) missingSearchAttributes(ctx context.Context) *runs.MissingSearchAttributesError {
	a.saMu.Lock()
	stale := a.saErr != nil && time.Since(a.saChecked) > recheckAfter
	a.saMu.Unlock()
	if stale {
		a.checkSearchAttributes(ctx)
	}
	a.saMu.Lock()
	defer a.saMu.Unlock()
	var missing *runs.MissingSearchAttributesError
	if errors.As(a.saErr, &missing) {
		return missing
	}
	return nil
}
