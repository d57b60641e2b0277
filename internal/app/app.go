// Package app assembles the process that cmd/server and cmd/worker run: the
// configuration from the environment, the zap logger, the Temporal
// connection (a remote server, or the embedded devtemporal server), the
// in-process worker and the HTTP listener.
//
// The caller supplies what is specific to the adapter through Parts: the
// worker registration (the tool workflows and activities) and the HTTP
// handler (the MCP mount, discovery, REST), built from Deps once Temporal is
// connected. App adds GET /healthz.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/internal/devtemporal"
	"github.com/openwop/temporal-mcp/signals"
)

// Timeouts of the process lifecycle.
const (
	// StartTimeout bounds the embedded server start and the first dial.
	StartTimeout = 2 * time.Minute
	// ShutdownTimeout bounds the graceful shutdown in Run.
	ShutdownTimeout = 15 * time.Second
	// healthTimeout bounds the Temporal check of /healthz.
	healthTimeout = 3 * time.Second
)

// Deps are what the HTTP handler is built from.
type Deps struct {
	// Logger is the process logger.
	Logger *zap.Logger
	// Client is connected to Namespace. App owns it: do not close it.
	Client client.Client
	// Namespace is the Temporal namespace runs live in.
	Namespace string
	// TaskQueue is the task queue tool workflows run on.
	TaskQueue string
}

// Parts are the adapter-specific pieces App runs.
type Parts struct {
	// Register registers the tool workflows and activities on the
	// in-process worker. nil (or Config.Worker false) runs no worker.
	Register func(worker.Registry)
	// Handler builds the HTTP handler mounted at "/". nil serves only
	// /healthz.
	Handler func(Deps) (http.Handler, error)
}

// App is a started process: Temporal connection, worker, HTTP listener.
type App struct {
	Deps
	// HTTPAddr is the address the HTTP listener is bound to.
	HTTPAddr string
	// TemporalAddress is the Temporal frontend host:port.
	TemporalAddress string
	// Embedded reports whether Temporal runs in this process.
	Embedded bool
	// UIURL is the embedded Web UI's URL ("" when not served).
	UIURL string
	// DBFile is the embedded server's SQLite file ("" when remote).
	DBFile string

	server  *devtemporal.Server
	worker  worker.Worker
	http    *http.Server
	serveCh chan error
}

// NewLogger builds the process logger: JSON lines (production) or
// human-readable console lines (development) on stderr at level.
func NewLogger(format string, level zapcore.Level) (*zap.Logger, error) {
	var cfg zap.Config
	switch format {
	case LogJSON:
		cfg = zap.NewProductionConfig()
	case LogConsole:
		cfg = zap.NewDevelopmentConfig()
		cfg.DisableStacktrace = true
	default:
		return nil, fmt.Errorf("log format %q: want %s or %s", format, LogJSON, LogConsole)
	}
	cfg.Level = zap.NewAtomicLevelAt(level)
	l, err := cfg.Build()
	if err != nil {
		return nil, fmt.Errorf("build logger: %w", err)
	}
	return l, nil
}

// Run starts the process, logs where everything listens, and runs until
// ctx is done (cmd/server cancels it on SIGINT/SIGTERM) or the HTTP
// listener fails; then it shuts down gracefully.
func Run(ctx context.Context, cfg Config, logger *zap.Logger, parts Parts) error {
	a, err := Start(ctx, cfg, logger, parts)
	if err != nil {
		return err
	}
	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case serveErr = <-a.serveCh:
		logger.Error("HTTP listener failed", zap.Error(serveErr))
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	return errors.Join(serveErr, a.Shutdown(sctx))
}

// Start connects to Temporal (starting the embedded server unless
// cfg.Remote), starts the worker and the HTTP listener, and returns. Call
// Shutdown to stop them.
func Start(ctx context.Context, cfg Config, logger *zap.Logger, parts Parts) (a *App, err error) {
	a = &App{Deps: Deps{Logger: logger, TaskQueue: cfg.TaskQueue, Namespace: cfg.Namespace()}}
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

	if err := a.connect(sctx, cfg); err != nil {
		return a, err
	}
	if cfg.Worker && parts.Register != nil {
		a.worker = worker.New(a.Client, cfg.TaskQueue, worker.Options{})
		parts.Register(a.worker)
		if err := a.worker.Start(); err != nil {
			a.worker = nil
			return a, fmt.Errorf("start worker on task queue %q: %w", cfg.TaskQueue, err)
		}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", a.healthz)
	if parts.Handler != nil {
		h, err := parts.Handler(a.Deps)
		if err != nil {
			return a, fmt.Errorf("build HTTP handler: %w", err)
		}
		mux.Handle("/", h)
	}
	l, err := (&net.ListenConfig{}).Listen(sctx, "tcp", cfg.HTTPAddr)
	if err != nil {
		return a, fmt.Errorf("HTTP listener: %w", err)
	}
	a.HTTPAddr = l.Addr().String()
	a.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(logger.Named("http")),
	}
	a.serveCh = make(chan error, 1)
	go func() {
		if err := a.http.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			a.serveCh <- err
		}
	}()

	fields := []zap.Field{
		zap.String("http", "http://"+a.HTTPAddr),
		zap.String("temporal", a.TemporalAddress),
		zap.String("namespace", a.Namespace),
		zap.String("task_queue", a.TaskQueue),
		zap.Bool("worker", a.worker != nil),
		zap.Bool("embedded_temporal", a.Embedded),
	}
	if a.Embedded {
		fields = append(fields, zap.String("temporal_ui", a.UIURL), zap.String("data", a.DBFile))
	}
	logger.Info("openwop server ready", fields...)
	if a.worker == nil && cfg.Worker {
		logger.Warn("no in-process worker: nothing to register")
	}
	return a, nil
}

// connect starts the embedded server (unless remote) and dials the client.
func (a *App) connect(ctx context.Context, cfg Config) error {
	opts := cfg.Client
	if !cfg.Remote {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		level := cfg.TemporalLogLevel
		srv, err := devtemporal.Start(ctx, devtemporal.Options{
			DBFile:    cfg.DBFile(),
			Port:      cfg.TemporalPort,
			Namespace: cfg.Namespace(),
			Logger:    a.Logger.Named("temporal-server"),
			LogLevel:  &level,
			UIPort:    cfg.UIPort,
		})
		if err != nil {
			return fmt.Errorf("embedded Temporal server (ports: %s, %s; 0 = any free port): %w",
				EnvTemporalPort, EnvUIPort, err)
		}
		a.server, a.Embedded = srv, true
		a.UIURL, a.DBFile = srv.UIURL(), srv.DBFile()
		opts = client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()}
	}
	opts.Logger = devtemporal.SDKLogger(a.Logger)
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", hostPort(opts), err)
	}
	a.Client, a.TemporalAddress = c, hostPort(opts)
	if cfg.Remote {
		// A self-hosted server lets us register the search attributes;
		// Temporal Cloud needs them added in its UI or with tcld.
		if err := devtemporal.EnsureSearchAttributes(ctx, c.OperatorService(), a.Namespace, signals.SearchAttributes); err != nil {
			a.Logger.Warn("could not register the OpenWOP search attributes; register them on the namespace (Keyword)",
				zap.Strings("names", signals.SearchAttributes), zap.Error(err))
		}
	}
	return nil
}

func hostPort(opts client.Options) string {
	if opts.HostPort == "" {
		return client.DefaultHostPort
	}
	return opts.HostPort
}

// Shutdown stops the HTTP listener (waiting for requests until ctx ends),
// the worker, the client and the embedded server, in that order.
func (a *App) Shutdown(ctx context.Context) error {
	var errs []error
	if a.http != nil {
		if err := a.http.Shutdown(ctx); err != nil {
			_ = a.http.Close()
			errs = append(errs, fmt.Errorf("HTTP shutdown: %w", err))
		}
		a.http = nil
	}
	if a.worker != nil {
		a.worker.Stop()
		a.worker = nil
	}
	if a.Client != nil {
		a.Client.Close()
		a.Client = nil
	}
	if a.server != nil {
		if err := a.server.Stop(); err != nil {
			errs = append(errs, err)
		}
		a.server = nil
	}
	return errors.Join(errs...)
}

// Health is the body of GET /healthz.
type Health struct {
	// Status is "ok" when Temporal answers, else "unavailable" (HTTP 503).
	Status   string         `json:"status"`
	Temporal TemporalHealth `json:"temporal"`
}

// TemporalHealth reports the Temporal connection.
type TemporalHealth struct {
	Address   string `json:"address"`
	Namespace string `json:"namespace"`
	Embedded  bool   `json:"embedded"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
}

func (a *App) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	h := Health{Status: "ok", Temporal: TemporalHealth{
		Address: a.TemporalAddress, Namespace: a.Namespace, Embedded: a.Embedded, Reachable: true,
	}}
	code := http.StatusOK
	if _, err := a.Client.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		h.Status, h.Temporal.Reachable, h.Temporal.Error = "unavailable", false, err.Error()
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(h)
}
