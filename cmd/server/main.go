package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry/export"
	"github.com/openwop/temporal-mcp/workflows"
)

func main() {
	if err := run(); err != nil {
		os.Exit(1)
	}
}

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

// serverEnv documents the variables cmd/server reads, for -h.
func serverEnv() []config.EnvVar {
	return append([]config.EnvVar{
		{Name: config.EnvHTTPAddr, Default: config.DefaultHTTPAddr + " (-stdio: a free port)", Meaning: "HTTP listen address (MCP at /mcp, REST, /healthz)"},
		{Name: config.EnvWorker, Default: "on", Meaning: "off: run no in-process worker"},
		{Name: config.EnvToolsFile, Default: "unset", Meaning: "JSON file of declared tools (docs/catalog.md)"},
		{Name: config.EnvTemporalPort, Default: fmt.Sprint(config.DefaultTemporalPort) + " (-stdio: a free port)", Meaning: "embedded Temporal frontend port (0: any free port)"},
		{Name: config.EnvUIPort, Default: fmt.Sprint(config.DefaultUIPort) + " (-stdio: a free port)", Meaning: "embedded Web UI port (0: any free port; off: no UI)"},
		{Name: config.EnvTemporalLogLevel, Default: "warn", Meaning: "level of the embedded Temporal server's logs"},
		{Name: auth.EnvKeys, Default: "unset (every caller is anon:local)", Meaning: "API keys: key=tenant:subject,..."},
		{Name: auth.EnvKeysFile, Default: "unset", Meaning: "JSON file of API keys [{key,tenant,subject}]"},
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
		{Name: envStdioTenant + ", " + envStdioSubject, Default: "anon:local", Meaning: "the caller of -stdio"},
	}, config.WorkerEnv()...)
}

// run runs the command; it reports its error itself (logged, or on stderr
// before the logger exists).
func run() error {
	stdio := flag.Bool("stdio", false, "serve one MCP client on stdin/stdout (logs go to stderr)")
	flag.Usage = func() {
		config.Usage(flag.CommandLine.Output(), "Command server serves Temporal workflows as MCP tools (embedding a Temporal server unless TEMPORAL_ADDRESS is set).",
			flag.CommandLine, serverEnv())
	}
	flag.Parse()
	worker.SetStickyWorkflowCacheSize(workflows.DefaultWorkflowCacheSize) // before any worker starts; process-wide
	// Every setting is checked before anything starts; an invalid one is
	// one line on stderr naming the variable, and exit status 1.
	var logger *zap.Logger
	st, err := loadSettings()
	if err == nil {
		logger, err = config.NewLogger(st.cfg.LogFormat, st.cfg.LogLevel)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "server: invalid configuration:", err)
		return err
	}
	cfg := st.cfg
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
	if st.toolsFile != "" {
		logger.Info("declared tools loaded", zap.String("file", st.toolsFile), zap.Int("tools", len(st.declared)))
	}
	authenticate := auth.Authenticator(st.keys.Authenticate)
	if st.keys.Dev() {
		authenticate = auth.AnonymousAuthenticator
		logger.Warn("no API keys configured (OPENWOP_API_KEYS): every caller is the anonymous local tenant",
			zap.String("tenant", auth.Anonymous().Tenant))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ad := &adapter{registry: reg, declared: st.declared, authenticate: authenticate, mrtrKey: st.mrtrKey,
		publicURL: cfg.PublicURL, allowedHosts: cfg.AllowedHosts, allowedOrigins: cfg.AllowedOrigins,
		journalPath: filepath.Join(cfg.DataDir, runJournalFile), worker: cfg.Worker}
	if *stdio {
		// Several stdio servers may share one data directory: none keeps
		// a journal there.
		ad.journalPath = ""
	}
	limits := cfg.Admission
	limits.OnReject = ad.rejected
	if ad.admission, err = admission.New(limits); err != nil {
		return fail("admission control", err)
	}
	parts := ad.parts()
	if *stdio {
		stdioConfig(&cfg, os.Getenv)
		err = serveStdio(ctx, cfg, logger, parts, ad)
	} else {
		err = app.Run(ctx, cfg, logger, parts)
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
	toolsFile string
	declared  []signals.ToolSpec
	mrtrKey   []byte
}

// loadSettings reads and checks every setting: internal/app/config's, the API
// keys, the declared tools and the MRTR key. Its error names the variable.
func loadSettings() (settings, error) {
	var st settings
	var err error
	if st.cfg, err = config.LoadConfig(envconfig.EnvLookupOS); err != nil {
		return st, err
	}
	if st.keys, err = auth.FromEnv(os.Getenv); err != nil {
		return st, err // names OPENWOP_API_KEYS or OPENWOP_API_KEYS_FILE
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

// runJournalFile is the run journal's file in the data directory: the
// runs being started and not yet handed to their callers, which a restart
// after a crash cancels (runs.FileJournal). One server process per data
// directory.
const runJournalFile = "runs-journal.jsonl"

// recoverTimeout bounds the start-up cancellation of the runs an earlier
// process left without an owner.
const recoverTimeout = 30 * time.Second

// minMRTRKey is the shortest OPENWOP_MRTR_KEY accepted.
const minMRTRKey = 32

// cursorKey derives the key of listRuns cursors from the MRTR key, so that
// replicas sharing OPENWOP_MRTR_KEY accept each other's cursors; nil (a
// random key per process) without one.
func cursorKey(mrtrKey []byte) []byte {
	if len(mrtrKey) == 0 {
		return nil
	}
	mac := hmac.New(sha256.New, mrtrKey)
	mac.Write([]byte("openwop listRuns cursor key"))
	return mac.Sum(nil)
}

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
func serveStdio(ctx context.Context, cfg config.Config, logger *zap.Logger, parts app.Parts, ad *adapter) error {
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
	serveErr := ad.mount.ServeStdio(sctx, caller, os.Stdin, os.Stdout)
	cancel()
	<-failed
	if failure == nil {
		logger.Info("stdin closed; shutting down")
	}
	shctx, shcancel := context.WithTimeout(context.Background(), app.ShutdownTimeout)
	defer shcancel()
	return errors.Join(failure, serveErr, a.Shutdown(shctx))
}

// adapter is what cmd/server runs on internal/app: the example tools'
// worker, and the catalog, MCP mount and REST API built once Temporal is
// connected.
type adapter struct {
	registry     *workflows.Registry
	declared     []signals.ToolSpec
	authenticate auth.Authenticator
	mrtrKey      []byte
	// The request gate's settings (internal/httpgate), the same for /mcp
	// and the REST API.
	publicURL                    string
	allowedHosts, allowedOrigins []string
	// admission is the admission control the mount and the REST API share.
	admission *admission.Controller
	// metrics, set by the handler when metrics are on, counts the
	// admission refusals (rejected).
	metrics atomic.Pointer[export.Metrics]
	// journalPath is the run journal's file (runs.FileJournal); "" keeps
	// none.
	journalPath string
	// worker: the process runs the in-process worker on its task queue.
	worker bool

	// Set by the handler.
	live  *catalog.Live
	mount *mcpmount.Mount
	runs  *runs.Service
}

// parts are the app.Parts of the adapter.
func (ad *adapter) parts() app.Parts {
	var taskQueue string
	return app.Parts{
		Handler: func(d app.Deps) (http.Handler, error) {
			taskQueue = d.TaskQueue
			return ad.handler(d)
		},
		// Session-era MCP clients hold a GET stream open for as long as
		// their session lives, and subscriptions/listen streams last until
		// their tasks end: end both so the drain is not held.
		OnShutdown: func() {
			if ad.mount != nil {
				_ = ad.mount.Shutdown(context.Background())
			}
		},
		Worker: func(ctx context.Context, d app.Deps) error {
			return ad.registry.Run(ctx, d.Client, d.TaskQueue, workflows.WorkerOptions{
				Worker: worker.Options{},
				Logger: config.SDKLogger(d.Logger.Named("worker")),
			})
		},
		// Ready once the catalog lists every tool of the in-process
		// worker on its task queue, so that a tools/list right after
		// "ready" shows them.
		WorkerReady: func(ctx context.Context) (bool, error) {
			if err := ad.live.Refresh(ctx); err != nil {
				return false, err
			}
			tools, err := ad.live.Tools(ctx)
			if err != nil {
				return false, err
			}
			listed := map[string]bool{}
			for _, t := range tools {
				if t.Spec().TaskQueue == taskQueue {
					listed[t.Spec().Name] = true
				}
			}
			for _, spec := range ad.registry.Specs() {
				if !listed[spec.Name] {
					return false, nil
				}
			}
			return true, nil
		},
		// The task queues of the in-process worker, of the served tools
		// and of runs read lately with no worker polling them.
		Unserved: func(ctx context.Context) ([]string, error) {
			var queues []string
			if ad.worker {
				queues = append(queues, taskQueue)
			}
			if tools, err := ad.live.Tools(ctx); err == nil {
				for _, t := range tools {
					queues = append(queues, t.Spec().TaskQueue)
				}
			}
			return ad.runs.UnservedQueues(ctx, queues...)
		},
	}
}

// rejected counts an admission refusal (admission.Options.OnReject).
func (ad *adapter) rejected(_, reason string) {
	if m := ad.metrics.Load(); m != nil {
		m.AdmissionRejected(reason)
	}
}

// handler builds the catalog (published and declared tools) and serves
// the MCP mount at /mcp and the OpenWOP discovery document and REST runs
// API on every other path, all on one run service.
func (ad *adapter) handler(d app.Deps) (http.Handler, error) {
	live, err := catalog.NewLive(d.Client, catalog.LiveOptions{Declared: ad.declared, Logger: d.Logger.Named("catalog")})
	if err != nil {
		return nil, fmt.Errorf("tool catalog: %w", err)
	}
	var journal runs.Journal
	if ad.journalPath != "" {
		if err := os.MkdirAll(filepath.Dir(ad.journalPath), 0o755); err != nil {
			return nil, fmt.Errorf("run journal: %w", err)
		}
		fj, err := runs.OpenFileJournal(ad.journalPath)
		if err != nil {
			return nil, err
		}
		journal = fj
	}
	svc := runs.New(d.Client, d.Logger.Named("runs"), runs.Options{
		TaskQueue:  d.TaskQueue,
		Namespace:  d.Namespace,
		EagerStart: true, // the in-process worker shares d.Client
		CursorKey:  cursorKey(ad.mrtrKey),
		Journal:    journal,
	})
	// Runs an earlier life of this process started and never handed to
	// their callers (it was killed in between) are cancelled before
	// anything is served; what cannot be settled now stays for next time.
	rctx, cancel := context.WithTimeout(context.Background(), recoverTimeout)
	if err := svc.Recover(rctx); err != nil {
		d.Logger.Warn("cancelling runs left without an owner by an earlier process", zap.Error(err))
	}
	cancel()
	mopts := mcpmount.Options{
		Runs:         svc,
		Catalog:      live,
		Authenticate: ad.authenticate,
		Logger:       d.Logger.Named("mcp"),
		MRTRKey:      ad.mrtrKey,
		PublicURL:    ad.publicURL,
		AllowedHosts: ad.allowedHosts, AllowedOrigins: ad.allowedOrigins,
		TracerProvider: d.Telemetry.TracerProvider(),
		Admission:      ad.admission,
	}
	if m := d.Telemetry.Metrics(); m != nil {
		ad.metrics.Store(m)
		mopts.Metrics = m
	}
	mount, err := mcpmount.New(mopts)
	if err != nil {
		return nil, fmt.Errorf("MCP mount: %w", err)
	}
	rest := restapi.New(restapi.Options{
		Runs:         svc,
		Authenticate: ad.authenticate,
		Catalog:      live,
		Logger:       d.Logger.Named("rest"),
		BaseURL:      ad.publicURL,
		AllowedHosts: ad.allowedHosts, AllowedOrigins: ad.allowedOrigins,
		TracerProvider: d.Telemetry.TracerProvider(),
		Admission:      ad.admission,
	})
	ad.live, ad.mount, ad.runs = live, mount, svc
	mux := http.NewServeMux()
	mux.Handle("/mcp", mount)
	mux.Handle("/", rest)
	return mux, nil
}
