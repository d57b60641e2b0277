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
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"go.temporal.io/sdk/contrib/envconfig"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/exampletools"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

func main() {
	if err := run(); err != nil {
		os.Exit(1)
	}
}

// run runs the command; it reports its error itself (logged, or on stderr
// before the logger exists).
func run() error {
	stdio := flag.Bool("stdio", false, "serve one MCP client on stdin/stdout (logs go to stderr)")
	flag.Parse()
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
	tools, err := exampletools.DefaultRegistry(acts, cfg.Fixtures)
	if err != nil {
		logger.Error("tool registry", zap.Error(err))
		return err
	}

	keys, err := auth.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if keys.Dev() {
		logger.Warn("no API keys configured (OPENWOP_API_KEYS): every caller is the anonymous local tenant",
			zap.String("tenant", auth.Anonymous().Tenant))
	}

	var mrtrKey []byte
	if k := os.Getenv(envMRTRKey); k != "" {
		mrtrKey = []byte(k)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var mount *mcpmount.Mount
	parts := app.Parts{
		Register: tools.Register,
		Handler: func(deps app.Deps) (http.Handler, error) {
			var h http.Handler
			mount, h, err = handler(deps, tools.Specs(), keys, mrtrKey)
			return h, err
		},
	}
	if *stdio {
		if os.Getenv(app.EnvHTTPAddr) == "" {
			// stdout is the client's: keep the HTTP side out of the way of
			// a server on the default port.
			cfg.HTTPAddr = "127.0.0.1:0"
		}
		err = serveStdio(ctx, cfg, logger, parts, &mount)
	} else {
		err = app.Run(ctx, cfg, logger, parts)
	}
	if err != nil {
		logger.Error("server stopped", zap.Error(err))
	}
	return err
}

// Environment of cmd/server beyond internal/app's.
const (
	// envMRTRKey is the HMAC key (32 bytes or more) of MRTR requestStates.
	// Unset: a random key per process.
	envMRTRKey = "OPENWOP_MRTR_KEY"
	// envStdioTenant and envStdioSubject name the caller of the stdio
	// client. Unset: the anonymous local tenant.
	envStdioTenant  = "OPENWOP_STDIO_TENANT"
	envStdioSubject = "OPENWOP_STDIO_SUBJECT"
)

// serveStdio runs the process with one MCP client on stdin/stdout. The end
// of stdin ends the process, after the runs its unanswered calls owned are
// cancelled.
func serveStdio(ctx context.Context, cfg app.Config, logger *zap.Logger, parts app.Parts, mount **mcpmount.Mount) error {
	a, err := app.Start(ctx, cfg, logger, parts)
	if err != nil {
		return err
	}
	caller := auth.Anonymous()
	if t := os.Getenv(envStdioTenant); t != "" {
		caller = signals.Subject{Issuer: "urn:openwop:stdio", Tenant: t, SubjectID: os.Getenv(envStdioSubject), Kind: "user"}
		if caller.SubjectID == "" {
			caller.SubjectID = "urn:openwop:stdio"
		}
	}
	logger.Info("serving one MCP client on stdin/stdout", zap.String("tenant", caller.Tenant))
	serveErr := (*mount).ServeStdio(ctx, caller, os.Stdin, os.Stdout)
	logger.Info("stdin closed; shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), app.ShutdownTimeout)
	defer cancel()
	return errors.Join(serveErr, a.Shutdown(sctx))
}

// handler serves the MCP mount at /mcp and the OpenWOP discovery document
// and REST runs API on every other path, all on one run service.
func handler(deps app.Deps, specs []signals.ToolSpec, keys *auth.Keys, mrtrKey []byte) (*mcpmount.Mount, http.Handler, error) {
	svc := runs.New(deps.Client, deps.Logger.Named("runs"), runs.Options{
		TaskQueue: deps.TaskQueue,
		Namespace: deps.Namespace,
	})
	mount, err := mcpmount.New(mcpmount.Options{
		Runs:    svc,
		Tools:   specs,
		Keys:    keys,
		Logger:  deps.Logger.Named("mcp"),
		MRTRKey: mrtrKey,
	})
	if err != nil {
		return nil, nil, err
	}
	rest := restapi.New(restapi.Options{
		Runs:          svc,
		Authenticate:  keys.Authenticate,
		Tools:         specs,
		Logger:        deps.Logger.Named("rest"),
		MRTRMaxRounds: mcpmount.DefaultMRTRMaxRounds,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mount)
	mux.Handle("/", rest)
	return mount, mux, nil
}
