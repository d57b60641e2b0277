package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/datadir"
	"github.com/openwop/temporal-mcp/internal/app/toolworker"
	"github.com/openwop/temporal-mcp/workflows"
)

// Summary is cmd/server's line of -h.
const Summary = "Command server serves Temporal workflows as MCP tools (embedding a Temporal server unless TEMPORAL_ADDRESS is set)."

// Main is cmd/server once its command line is parsed: it reads and checks
// every setting before anything starts (an invalid one is one line on
// stderr naming the variable), and runs the server until SIGINT or SIGTERM,
// or with stdio (-stdio) until the end of stdin. It reports its error
// itself (logged, or on stderr before the logger exists).
func Main(stdio bool) error {
	worker.SetStickyWorkflowCacheSize(workflows.DefaultWorkflowCacheSize) // before any worker starts; process-wide
	toolworker.IdentifyBinary()
	var logger *zap.Logger
	st, err := loadSettings(envconfig.EnvLookupOS, stdio)
	if err == nil {
		logger, err = config.NewLogger(st.cfg.LogFormat, st.cfg.LogLevel)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "server: invalid configuration:", err)
		return err
	}
	defer func() { _ = logger.Sync() }()
	defer func() { _ = st.audit.Close() }()
	return serve(st, logger, stdio)
}

// serve runs the server of the checked settings st, logging its failure.
func serve(st settings, logger *zap.Logger, stdio bool) error {
	cfg := st.cfg
	fail := func(msg string, err error) error {
		logger.Error(msg, zap.Error(err))
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reg, closeUpstreams, err := toolworker.Registry(ctx, cfg, logger)
	if err != nil {
		return fail("tool registry", err)
	}
	defer func() { _ = closeUpstreams() }()
	if cfg.UpstreamsFile != "" && cfg.Worker {
		logger.Info("upstream MCP servers served", zap.String("file", cfg.UpstreamsFile), zap.Int("upstreams", len(cfg.Upstreams.Upstreams)))
	}
	sc := cfg.Server
	if sc.ToolsFile != "" {
		logger.Info("declared tools loaded", zap.String("file", sc.ToolsFile), zap.Int("tools", len(sc.Declared)))
	}
	authenticate := auth.Authenticator(sc.Keys.Authenticate)
	var oauth *auth.OAuth
	switch {
	case sc.OAuth != nil:
		oopts := *sc.OAuth
		oopts.Logger = logger.Named("oauth")
		if oauth, err = auth.NewOAuth(oopts); err != nil {
			return fail("OAuth", err)
		}
		defer oauth.Close()
		authenticate = oauth.Authenticator(sc.Keys)
		logger.Info("OAuth resource server", zap.String("resource", oopts.Resource), zap.Strings("issuers", oopts.Issuers),
			zap.Int("api_keys", sc.Keys.Len()))
	case sc.Keys.Dev():
		authenticate = auth.AnonymousAuthenticator
		logger.Warn("no API keys configured (OPENWOP_API_KEYS): every caller is the anonymous local tenant",
			zap.String("tenant", auth.Anonymous().Tenant))
	}

	opts := ServerOptions{Registry: reg, Declared: sc.Declared, Authenticate: authenticate, OAuth: oauth, Audit: st.audit, MRTRKey: sc.MRTRKey,
		NoCompanionTools: !sc.CompanionTools, ResultLimit: sc.ResultLimit, NoRunListTool: !sc.RunListTool, MaxBlockingWait: sc.MaxBlockingWait,
		PublicURL: cfg.PublicURL, AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins,
		Admission: &cfg.Admission, MaxTemporalCalls: cfg.TemporalMaxCalls, JournalPath: filepath.Join(cfg.DataDir, runJournalFile), Worker: cfg.Worker,
		Nexus: NexusOptionsOf(sc)}
	if stdio {
		// Several stdio servers may share one data directory: none keeps
		// a journal there.
		opts.JournalPath = ""
	}
	srv, err := NewServer(opts)
	if err != nil {
		return fail("admission control", err)
	}
	if stdio {
		err = serveStdio(ctx, cfg, logger, srv)
	} else {
		err = Run(ctx, cfg, logger, srv.Parts())
	}
	if err != nil {
		return fail("server stopped", err)
	}
	return nil
}

// settings is the checked configuration of the process, and the audit
// trail it opened.
type settings struct {
	cfg   config.Config
	audit *audit.Trail
}

// loadSettings reads and checks every setting of env
// (config.LoadServer), reads the MRTR key from the data directory's key
// file (datadir.Key) when config.EnvMRTRKey is unset, and opens the audit trail.
// Its error names the variable.
func loadSettings(env envconfig.EnvLookup, stdio bool) (settings, error) {
	var st settings
	var err error
	if st.cfg, err = config.LoadServer(env, stdio); err != nil {
		return st, err
	}
	if st.cfg.Server.MRTRKey == nil && !(stdio && st.cfg.Remote) {
		// The data directory keeps the key, so that what it seals
		// outlives a restart. A -stdio process on a remote Temporal uses
		// no data directory and keeps a random key.
		if st.cfg.Server.MRTRKey, err = datadir.Key(st.cfg.DataDir); err != nil {
			return st, fmt.Errorf("%s unset: %w", config.EnvMRTRKey, err)
		}
	}
	if st.audit, err = audit.Open(st.cfg.Server.AuditLog); err != nil {
		return st, fmt.Errorf("%s: %w", config.EnvAuditLog, err)
	}
	return st, nil
}

// serveStdio runs the process with one MCP client on stdin/stdout. It
// answers the client as soon as the mount exists (Temporal connected),
// while the in-process worker starts: until the worker's tools are listed
// the catalog's answers wait (Server.ready), so a tools/list never misses
// them. The end of stdin ends the process, after the runs its unanswered
// calls owned are cancelled; so does a failure of the start, of the worker
// or of the HTTP listener.
func serveStdio(ctx context.Context, cfg config.Config, logger *zap.Logger, srv *Server) error {
	srv.ready = make(chan struct{})
	type start struct {
		a   *App
		err error
	}
	started := make(chan start, 1)
	go func() {
		a, err := Start(ctx, cfg, logger, srv.Parts())
		started <- start{a, err}
	}()
	var st start
	select {
	case <-srv.built:
	case st = <-started:
		if st.err != nil {
			return st.err
		}
	}
	caller := cfg.Server.StdioCaller
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.mount.ServeStdio(sctx, caller, os.Stdin, os.Stdout) }()
	logger.Info("serving one MCP client on stdin/stdout", zap.String("tenant", caller.Tenant))
	if st.a == nil {
		st = <-started
	}
	// Requests that wait for the catalog go on, whether it is complete
	// (the start succeeded) or the process is about to end.
	close(srv.ready)
	if st.err != nil {
		cancel()
		return errors.Join(st.err, <-served)
	}
	return stdioUntilDone(st.a, logger, served, cancel)
}

// stdioUntilDone waits until the stdio client goes (served) or a started
// App fails, then shuts a down.
func stdioUntilDone(a *App, logger *zap.Logger, served <-chan error, cancel context.CancelFunc) error {
	var failure, serveErr error
	select {
	case failure = <-a.Failed():
		logger.Error("shutting down after a failure", zap.Error(failure))
		cancel()
		serveErr = <-served
	case serveErr = <-served:
		logger.Info("stdin closed; shutting down")
	}
	shctx, shcancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer shcancel()
	return errors.Join(failure, serveErr, a.Shutdown(shctx))
}
