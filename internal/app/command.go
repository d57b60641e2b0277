package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/toolworker"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// Environment of cmd/server beyond internal/app/config's.
const (
	// envMRTRKey is the HMAC key (32 bytes or more) of MRTR requestStates.
	// Unset: a random key per process.
	envMRTRKey = "OPENWOP_MRTR_KEY"
	// envStdioTenant and envStdioSubject name the caller of the stdio
	// client. Unset: the anonymous local tenant.
	envStdioTenant  = "OPENWOP_STDIO_TENANT"
	envStdioSubject = "OPENWOP_STDIO_SUBJECT"
)

// ServerEnv documents the variables cmd/server reads, for -h.
func ServerEnv() []config.EnvVar {
	return append([]config.EnvVar{
		{Name: config.EnvHTTPAddr, Default: config.DefaultHTTPAddr + " (-stdio: a free port)", Meaning: "HTTP listen address (MCP at /mcp, REST, /healthz)"},
		{Name: config.EnvWorker, Default: "on", Meaning: "off: run no in-process worker"},
		{Name: config.EnvToolsFile, Default: "unset", Meaning: "JSON file of declared tools (docs/catalog.md)"},
		{Name: config.EnvTemporalPort, Default: fmt.Sprint(config.DefaultTemporalPort) + " (-stdio: a free port)", Meaning: "embedded Temporal frontend port (0: any free port)"},
		{Name: config.EnvUIPort, Default: fmt.Sprint(config.DefaultUIPort) + " (-stdio: a free port)", Meaning: "embedded Web UI port (0: any free port; off: no UI)"},
		{Name: config.EnvTemporalLogLevel, Default: "warn", Meaning: "level of the embedded Temporal server's logs"},
		{Name: auth.EnvKeys, Default: "unset (every caller is anon:local)", Meaning: "API keys: key=tenant:subject,..."},
		{Name: auth.EnvKeysFile, Default: "unset", Meaning: "JSON file of API keys [{key,tenant,subject}]"},
		{Name: audit.EnvLog, Default: audit.DefaultSink, Meaning: "the audit trail's sink: stderr, stdout, a file path (appended) or off"},
		{Name: config.EnvOAuthIssuers, Default: "unset (no OAuth)", Meaning: "OAuth issuer URLs whose access tokens are accepted (docs/oauth.md); needs " + config.EnvPublicURL},
		{Name: config.EnvOAuthTenantClaim, Default: "unset (required with issuers)", Meaning: "token claim that holds the tenant"},
		{Name: config.EnvOAuthGroupsClaim, Default: "unset", Meaning: "token claim with the caller's groups or roles (approvers \"group:<value>\")"},
		{Name: config.EnvOAuthRequiredScopes, Default: "unset", Meaning: "scopes every request's token needs (space- or comma-separated)"},
		{Name: envMRTRKey, Default: "random per process", Meaning: "HMAC key (32+ bytes) of MRTR requestStates and listRuns cursors"},
		{Name: config.EnvPublicURL, Default: "unset (links name the address a connection arrived on)", Meaning: "external base URL: links in responses; its host and origin are allowed"},
		{Name: config.EnvAllowedHosts, Default: "unset (loopback hosts only on 127.0.0.1)", Meaning: "further Host header values accepted (host or host:port, comma-separated)"},
		{Name: config.EnvAllowedOrigins, Default: "unset (loopback origins only on 127.0.0.1)", Meaning: "further Origin header values accepted (scheme://host[:port], comma-separated)"},
		{Name: config.EnvHTTPReadTimeout, Default: config.DefaultHTTPReadTimeout.String(), Meaning: "a request, headers and body, must arrive within it (responses are not bounded)"},
		{Name: config.EnvHTTPIdleTimeout, Default: config.DefaultHTTPIdleTimeout.String(), Meaning: "idle keep-alive connections close after it"},
		{Name: config.EnvHTTPMaxConns, Default: fmt.Sprint(config.DefaultHTTPMaxConns), Meaning: "most HTTP connections open at once"},
		{Name: config.EnvMaxStarts, Default: fmt.Sprint(admission.DefaultMaxStarts), Meaning: "most run starts in progress at once; more are refused at once (503, Retry-After)"},
		{Name: config.EnvMaxBlockingCalls, Default: fmt.Sprint(admission.DefaultMaxWaiting), Meaning: "most blocking tools/call requests waiting for their runs at once"},
		{Name: config.EnvTenantMaxCalls, Default: fmt.Sprint(admission.DefaultTenantMax), Meaning: "most starts in progress plus blocking calls waiting of one tenant"},
		{Name: config.EnvTemporalMaxCalls, Default: fmt.Sprint(runs.DefaultMaxTemporalCalls), Meaning: "most Temporal calls (starts, signals, queries, describes) in flight at once; more wait in the process"},
		{Name: envStdioTenant + ", " + envStdioSubject, Default: "anon:local", Meaning: "the caller of -stdio"},
	}, config.WorkerEnv()...)
}

// Summary is cmd/server's line of -h.
const Summary = "Command server serves Temporal workflows as MCP tools (embedding a Temporal server unless TEMPORAL_ADDRESS is set)."

// Main is cmd/server once its command line is parsed: it reads and checks
// every setting before anything starts (an invalid one is one line on
// stderr naming the variable), and runs the server until SIGINT or SIGTERM,
// or with stdio (-stdio) until the end of stdin. It reports its error
// itself (logged, or on stderr before the logger exists).
func Main(stdio bool) error {
	worker.SetStickyWorkflowCacheSize(workflows.DefaultWorkflowCacheSize) // before any worker starts; process-wide
	var logger *zap.Logger
	st, err := loadSettings(stdio)
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
	reg, err := toolworker.Registry(cfg, logger)
	if err != nil {
		return fail("tool registry", err)
	}
	if st.toolsFile != "" {
		logger.Info("declared tools loaded", zap.String("file", st.toolsFile), zap.Int("tools", len(st.declared)))
	}
	authenticate := auth.Authenticator(st.keys.Authenticate)
	var oauth *auth.OAuth
	switch {
	case st.oauth != nil:
		st.oauth.Logger = logger.Named("oauth")
		if oauth, err = auth.NewOAuth(*st.oauth); err != nil {
			return fail("OAuth", err)
		}
		defer oauth.Close()
		authenticate = oauth.Authenticator(st.keys)
		logger.Info("OAuth resource server", zap.String("resource", st.oauth.Resource), zap.Strings("issuers", st.oauth.Issuers),
			zap.Int("api_keys", st.keys.Len()))
	case st.keys.Dev():
		authenticate = auth.AnonymousAuthenticator
		logger.Warn("no API keys configured (OPENWOP_API_KEYS): every caller is the anonymous local tenant",
			zap.String("tenant", auth.Anonymous().Tenant))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := ServerOptions{Registry: reg, Declared: st.declared, Authenticate: authenticate, OAuth: oauth, Audit: st.audit, MRTRKey: st.mrtrKey,
		PublicURL: cfg.PublicURL, AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins,
		Admission: &cfg.Admission, MaxTemporalCalls: cfg.TemporalMaxCalls, JournalPath: filepath.Join(cfg.DataDir, runJournalFile), Worker: cfg.Worker}
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
		stdioConfig(&cfg, os.Getenv)
		err = serveStdio(ctx, cfg, logger, srv)
	} else {
		err = Run(ctx, cfg, logger, srv.Parts())
	}
	if err != nil {
		return fail("server stopped", err)
	}
	return nil
}

// settings is the checked configuration of the process.
type settings struct {
	cfg       config.Config
	keys      *auth.Keys
	audit     *audit.Trail
	oauth     *auth.OAuthOptions
	toolsFile string
	declared  []signals.ToolSpec
	mrtrKey   []byte
}

// loadSettings reads and checks every setting: internal/app/config's, the API
// keys, OAuth, the audit trail's sink (not stdout with stdio, where stdout
// is the MCP stream), the declared tools and the MRTR key. Its error names
// the variable.
func loadSettings(stdio bool) (settings, error) {
	var st settings
	var err error
	if st.cfg, err = config.LoadConfig(envconfig.EnvLookupOS); err != nil {
		return st, err
	}
	if st.keys, err = auth.FromEnv(os.Getenv); err != nil {
		return st, err // names OPENWOP_API_KEYS or OPENWOP_API_KEYS_FILE
	}
	if err = config.CheckOAuthNames(os.Environ()); err != nil {
		return st, err
	}
	getenv := func(name string) string { return strings.TrimSpace(os.Getenv(name)) }
	if st.oauth, err = config.LoadOAuth(getenv, st.cfg.PublicURL); err != nil {
		return st, err
	}
	if stdio && strings.TrimSpace(os.Getenv(audit.EnvLog)) == audit.SinkStdout {
		return st, fmt.Errorf("%s: stdout is the MCP stream of -stdio; use stderr or a file", audit.EnvLog)
	}
	if st.audit, err = audit.FromEnv(os.Getenv); err != nil {
		return st, err
	}
	if st.toolsFile = os.Getenv(config.EnvToolsFile); st.toolsFile != "" {
		if st.declared, err = catalog.LoadDeclarations(st.toolsFile); err != nil {
			return st, fmt.Errorf("%s: %w", config.EnvToolsFile, err)
		}
	}
	if k := os.Getenv(envMRTRKey); k != "" {
		if len(k) < minMRTRKey {
			return st, fmt.Errorf("%s: the key is %d bytes; want at least %d", envMRTRKey, len(k), minMRTRKey)
		}
		st.mrtrKey = []byte(k)
	}
	return st, nil
}

// minMRTRKey is the shortest OPENWOP_MRTR_KEY accepted.
const minMRTRKey = 32

// stdioConfig adapts cfg to -stdio, where several hosts may each launch
// the process with one configuration: the HTTP listener, the embedded
// Temporal frontend and the Web UI take free ports unless their variable
// is set, and a data directory held by another process is shared
// (config.Config.ShareDataDir): this one uses the holder's Temporal server,
// never opening the database itself, until the holder exits.
func stdioConfig(cfg *config.Config, getenv func(string) string) {
	if getenv(config.EnvHTTPAddr) == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	if getenv(config.EnvTemporalPort) == "" {
		cfg.TemporalPort = 0
	}
	if getenv(config.EnvUIPort) == "" {
		cfg.UIPort = 0
	}
	cfg.ShareDataDir = true
}

// serveStdio runs the process with one MCP client on stdin/stdout. The end
// of stdin ends the process, after the runs its unanswered calls owned are
// cancelled; so does a failure of the worker or the HTTP listener.
func serveStdio(ctx context.Context, cfg config.Config, logger *zap.Logger, srv *Server) error {
	a, err := Start(ctx, cfg, logger, srv.Parts())
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
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var failure error
	failed := make(chan struct{})
	go func() {
		defer close(failed)
		select {
		case failure = <-a.Failed():
			logger.Error("shutting down after a failure", zap.Error(failure))
			cancel()
		case <-sctx.Done():
		}
	}()
	logger.Info("serving one MCP client on stdin/stdout", zap.String("tenant", caller.Tenant))
	serveErr := srv.mount.ServeStdio(sctx, caller, os.Stdin, os.Stdout)
	cancel()
	<-failed
	if failure == nil {
		logger.Info("stdin closed; shutting down")
	}
	shctx, shcancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer shcancel()
	return errors.Join(failure, serveErr, a.Shutdown(shctx))
}
