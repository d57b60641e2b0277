package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/edge"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/keycheck"
	"github.com/openwop/temporal-mcp/internal/app/toolworker"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry/export"
	"github.com/openwop/temporal-mcp/workflows"
)

// runJournalFile is the run journal's file in the data directory: the
// runs being started and not yet handed to their callers, which a restart
// after a crash cancels (runs.FileJournal). One server process per data
// directory.
const runJournalFile = "runs-journal.jsonl"

// recoverTimeout bounds the start-up cancellation of the runs an earlier
// process left without an owner.
const recoverTimeout = 30 * time.Second

// ServerOptions configure a Server.
type ServerOptions struct {
	// Registry holds the tools of the in-process worker.
	Registry *workflows.Registry
	// Declared are the tools declared in OPENWOP_TOOLS_FILE, served
	// besides the published ones.
	Declared []signals.ToolSpec
	// Authenticate authenticates the callers of the mount and the REST API.
	Authenticate auth.Authenticator
	// Audit, when set, receives the audit trail: every run start, answer
	// and cancellation and every refusal on authorization grounds, of
	// the mount and the REST API alike.
	Audit *audit.Trail
	// OAuth, when set, is the OAuth resource server Authenticate uses: the
	// handler serves its RFC 9728 metadata, and /healthz reports its
	// unreachable issuers.
	OAuth *auth.OAuth
	// MRTRKey is the HMAC key of MRTR requestStates and, derived from it,
	// of listRuns cursors; nil: a random key per process.
	MRTRKey []byte
	// NoCompanionTools turns the mount's companion tools off
	// (mcpmount.Options.NoCompanionTools).
	NoCompanionTools bool
	// ResultLimit is the mount's result limit (mcpmount.Options.ResultLimit).
	ResultLimit int
	// NoRunListTool turns the mount's list tool off
	// (mcpmount.Options.NoRunListTool).
	NoRunListTool bool
	// MaxBlockingWait bounds a task-less MCP call's wait before its
	// handoff (mcpmount.Options.MaxBlockingWait; 0: its default).
	MaxBlockingWait time.Duration
	// PublicURL, AllowedHosts and AllowedOrigins are the request gate's
	// settings (edge.Options), the same for /mcp and the REST API; the
	// REST API's links start with PublicURL.
	PublicURL                    string
	AllowedHosts, AllowedOrigins []string
	// Admission, when set, are the limits of the admission control the
	// mount and the REST API share; nil admits every call.
	Admission *admission.Options
	// JournalPath is the run journal's file (runs.FileJournal); "" keeps
	// none.
	JournalPath string
	// ReadWindow is how long a read of a working run is reused
	// (runs.Options.ReadWindow): 0 means the default, negative no reuse.
	ReadWindow time.Duration
	// MaxTemporalCalls bounds the Temporal calls the run service makes at
	// once (runs.Options.MaxTemporalCalls): 0 means the default.
	MaxTemporalCalls int
	// Worker reports that the process runs the in-process worker on its
	// task queue.
	Worker bool
	// Nexus, when set, has the in-process worker serve the tools' Nexus
	// service too (docs/nexus.md).
	Nexus *NexusOptions
}

// Server is what cmd/server runs on App: the example tools' worker, and the
// catalog, MCP mount and REST API built once Temporal is connected.
type Server struct {
	opts ServerOptions
	// admission is the admission control the mount and the REST API share.
	admission *admission.Controller
	// metrics, set by the handler when metrics are on, counts the
	// admission refusals (rejected).
	metrics atomic.Pointer[export.Metrics]

	// ready, when set (a stdio server), holds the answers of the catalog
	// the mount and the REST API read until it is closed: such a server
	// answers initialize before its in-process worker has published, and
	// a tools/list then waits for the worker's tools.
	ready chan struct{}
	// built is closed once the handler has built the mount.
	built chan struct{}

	// Set by the handler.
	live  *catalog.Live
	mount *mcpmount.Mount
	runs  *runs.Service
	// served and backend are the catalog and the (audited) run service
	// the edges use; the Nexus service uses them too.
	served  catalog.Source
	backend runs.Backend
}

// readyCatalog is a catalog whose answers wait until ready is closed (or
// their context ends).
type readyCatalog struct {
	*catalog.Live
	ready <-chan struct{}
}

func (c readyCatalog) wait(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the in-process worker's tools: %w", ctx.Err())
	}
}

// Tools returns the catalog's tools once it is ready.
func (c readyCatalog) Tools(ctx context.Context) ([]*catalog.Tool, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	return c.Live.Tools(ctx)
}

// Lookup looks up a tool once the catalog is ready.
func (c readyCatalog) Lookup(ctx context.Context, name string) (*catalog.Tool, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	return c.Live.Lookup(ctx, name)
}

// ForCall looks up a tool for a call once the catalog is ready.
func (c readyCatalog) ForCall(ctx context.Context, name string) (*catalog.Tool, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	return c.Live.ForCall(ctx, name)
}

// workerReady reports whether the catalog lists every tool of the
// in-process worker (of d) on its task queue, or why not when it knows.
// A versioned worker whose version is not its deployment's current one is
// ready as it is: only an operator makes it current (its tools are
// listed from then on), and a wait would only delay the start.
func (s *Server) workerReady(ctx context.Context, d Deps) (bool, error) {
	if err := s.live.Refresh(ctx); err != nil {
		return false, err
	}
	tools, err := s.live.Tools(ctx)
	if err != nil {
		return false, err
	}
	listed := map[string]bool{}
	for _, t := range tools {
		if t.Spec().TaskQueue == d.TaskQueue {
			listed[t.Spec().Name] = true
		}
	}
	for _, spec := range s.opts.Registry.Specs() {
		if listed[spec.Name] {
			continue
		}
		// Why it is not, when the catalog knows (e.g. a versioned worker
		// whose deployment has no current version yet).
		var unav *catalog.UnavailableError
		if _, err := s.live.Lookup(ctx, spec.Name); !errors.As(err, &unav) {
			return false, nil
		}
		if current, known := currentBuild(ctx, d); known && current != d.BuildID {
			d.Logger.Warn("the in-process worker serves a version of its Worker Deployment that is not current: its tools are refused as unavailable until an operator makes it current (openwop-server versions set-current, or temporal worker deployment set-current-version --yes)",
				zap.String("deployment", d.DeploymentName), zap.String("build_id", d.BuildID), zap.String("current_build_id", current),
				zap.String("reason", unav.Reason))
			return true, nil
		}
		return false, unav
	}
	return true, nil
}

// currentBuild is the build id of the current version of the in-process
// worker's Worker Deployment ("" for none), known once Temporal knows the
// deployment (the worker polled); never known for an unversioned worker.
func currentBuild(ctx context.Context, d Deps) (string, bool) {
	if d.DeploymentName == "" || d.Client == nil {
		return "", false
	}
	desc, err := d.Client.WorkerDeploymentClient().GetHandle(d.DeploymentName).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return "", false
	}
	if cur := desc.Info.RoutingConfig.CurrentVersion; cur != nil {
		return cur.BuildID, true
	}
	return "", true
}

// NewServer returns the Server of opts; its error is the admission
// limits'.
func NewServer(opts ServerOptions) (*Server, error) {
	s := &Server{opts: opts, built: make(chan struct{})}
	if opts.Admission != nil {
		limits := *opts.Admission
		limits.OnReject = s.rejected
		ctl, err := admission.New(limits)
		if err != nil {
			return nil, err
		}
		s.admission = ctl
	}
	return s, nil
}

// Parts returns what App runs for the server: its handler, its in-process
// worker and their readiness and health checks.
func (s *Server) Parts() Parts {
	var deps Deps
	return Parts{
		Handler: func(d Deps) (http.Handler, error) {
			deps = d
			return s.handler(d)
		},
		// Session-dialect MCP clients hold a GET stream open for as long as
		// their session lives, and subscriptions/listen streams last until
		// their tasks end: end both so the drain is not held.
		OnShutdown: func() {
			if s.mount != nil {
				_ = s.mount.Shutdown(context.Background())
			}
		},
		Worker: s.worker,
		// Ready once the catalog lists every tool of the in-process
		// worker on its task queue, so that a tools/list right after
		// "ready" shows them.
		WorkerReady: func(ctx context.Context) (bool, error) { return s.workerReady(ctx, deps) },
		// The task queues of the in-process worker, of the served tools
		// and of runs read lately with no worker polling them.
		Unserved: func(ctx context.Context) ([]runs.Unserved, error) {
			var queues []string
			if s.opts.Worker {
				queues = append(queues, deps.TaskQueue)
			}
			if tools, err := s.live.Tools(ctx); err == nil {
				for _, t := range tools {
					queues = append(queues, t.Spec().TaskQueue)
				}
			}
			return s.runs.UnservedQueues(ctx, queues...)
		},
		Unreachable: s.unreachable(),
	}
}

// worker is Parts.Worker: the worker of the example tools and, with
// ServerOptions.Nexus, the tools' Nexus service.
func (s *Server) worker(ctx context.Context, d Deps) error {
	serveTools := func(ctx context.Context) error {
		return toolworker.Serve(ctx, s.opts.Registry, d.Client,
			config.Config{TaskQueue: d.TaskQueue, DeploymentName: d.DeploymentName, BuildID: d.BuildID}, d.Logger,
			InProcessWorkerStopTimeout)
	}
	if s.opts.Nexus == nil {
		return serveTools(ctx)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return serveTools(gctx) })
	g.Go(func() error { return s.serveNexus(gctx, d, s.served, s.backend) })
	return g.Wait()
}

// unreachable is Parts.Unreachable: the OAuth issuers not reached yet.
func (s *Server) unreachable() func() map[string]string {
	if s.opts.OAuth == nil {
		return nil
	}
	return s.opts.OAuth.Unreachable
}

// rejected counts an admission refusal (admission.Options.OnReject).
func (s *Server) rejected(_, reason string) {
	if m := s.metrics.Load(); m != nil {
		m.AdmissionRejected(reason)
	}
}

// handler builds the catalog (published and declared tools) and serves
// the MCP mount at /mcp and the OpenWOP discovery document and REST runs
// API on every other path, all on one run service.
func (s *Server) handler(d Deps) (http.Handler, error) {
	live, err := catalog.NewLive(d.Client, catalog.LiveOptions{Declared: s.opts.Declared, Namespace: d.Namespace, Logger: d.Logger.Named("catalog")})
	if err != nil {
		return nil, fmt.Errorf("tool catalog: %w", err)
	}
	var journal runs.Journal
	if s.opts.JournalPath != "" {
		if err := os.MkdirAll(filepath.Dir(s.opts.JournalPath), 0o755); err != nil {
			return nil, fmt.Errorf("run journal: %w", err)
		}
		fj, err := runs.OpenFileJournal(s.opts.JournalPath)
		if err != nil {
			return nil, err
		}
		journal = fj
	}
	svc := runs.New(d.Client, d.Logger.Named("runs"), runs.Options{
		TaskQueue:  d.TaskQueue,
		Namespace:  d.Namespace,
		EagerStart: true, // the in-process worker shares d.Client
		CursorKey:  derivedKey(s.opts.MRTRKey, "openwop listRuns cursor key"), RunIDSecret: derivedKey(s.opts.MRTRKey, "openwop idempotent runId key"),
		Journal:    journal,
		ReadWindow: s.opts.ReadWindow,
		// Bounded calls keep a loaded Temporal at its best rate.
		MaxTemporalCalls: s.opts.MaxTemporalCalls,
	})
	// Runs an earlier life of this process started and never handed to
	// their callers (it was killed in between) are cancelled before
	// anything is served; what cannot be settled now stays for next time.
	rctx, cancel := context.WithTimeout(context.Background(), recoverTimeout)
	if err := svc.Recover(rctx); err != nil {
		d.Logger.Warn("cancelling runs left without an owner by an earlier process", zap.Error(err))
	}
	cancel()
	s.checkKey(d)
	backend := s.opts.Audit.Backend(svc)
	var served catalog.Source = live
	if s.ready != nil {
		served = readyCatalog{Live: live, ready: s.ready}
	}
	mount, rest, err := s.edges(d, svc, backend, served)
	if err != nil {
		return nil, err
	}
	s.live, s.mount, s.runs, s.served, s.backend = live, mount, svc, served, backend
	close(s.built)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mount)
	mux.Handle("/", rest)
	if o := s.opts.OAuth; o != nil {
		meta := o.MetadataHandler(func() []string { return toolScopes(live) })
		mux.Handle(auth.MetadataPath, meta)
		mux.Handle(auth.MetadataPath+auth.ResourcePath, meta)
	}
	return mux, nil
}

// edges builds what the MCP mount and the REST API share, once: one
// edge.Kit (the audited run service with the output check, the catalog
// served, the audited authenticator, the request gate, the tracer,
// admission and the MRTR round cap); then both edges on it.
func (s *Server) edges(d Deps, svc *runs.Service, backend runs.Backend, served catalog.Source) (*mcpmount.Mount, http.Handler, error) {
	kit, err := edge.New(edge.Options{
		Runs:         backend,
		Catalog:      served,
		Authenticate: s.opts.Audit.Authenticator(s.opts.Authenticate),
		OAuth:        s.opts.OAuth,
		ScopeRefused: s.opts.Audit.ScopeRefused,
		PublicURL:    s.opts.PublicURL,
		AllowedHosts: s.opts.AllowedHosts, AllowedOrigins: s.opts.AllowedOrigins,
		TracerProvider: d.Telemetry.TracerProvider(),
		RunTrace:       svc.StartTrace,
		Admission:      s.admission,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("edges: %w", err)
	}
	mopts := mcpmount.Options{
		Kit:     kit,
		Logger:  d.Logger.Named("mcp"),
		MRTRKey: s.opts.MRTRKey, NoCompanionTools: s.opts.NoCompanionTools, ResultLimit: s.opts.ResultLimit,
		NoRunListTool: s.opts.NoRunListTool, MaxBlockingWait: s.opts.MaxBlockingWait,
	}
	if m := d.Telemetry.Metrics(); m != nil {
		s.metrics.Store(m)
		mopts.Metrics = m
	}
	mount, err := mcpmount.New(mopts)
	if err != nil {
		return nil, nil, fmt.Errorf("MCP mount: %w", err)
	}
	rest, err := restapi.New(restapi.Options{Kit: kit, Logger: d.Logger.Named("rest")})
	if err != nil {
		return nil, nil, fmt.Errorf("REST API: %w", err)
	}
	return mount, rest, nil
}

// toolScopes are the scopes the catalog's tools need, for the RFC 9728
// metadata.
func toolScopes(live *catalog.Live) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	tools, err := live.Tools(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range tools {
		out = append(out, t.Spec().Scopes...)
	}
	return out
}

// keyCheckTimeout bounds the start-up comparison of the MRTR key with the
// other replicas'.
const keyCheckTimeout = 10 * time.Second

// checkKey logs an error when this replica's MRTR key is not the one the
// replica before it on the namespace published (keycheck): replicas must
// share one key. A server without a key (a random one per process) has
// nothing to compare.
func (s *Server) checkKey(d Deps) {
	if len(s.opts.MRTRKey) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), keyCheckTimeout)
	defer cancel()
	host, _ := os.Hostname()
	err := keycheck.Check(ctx, d.Client, s.opts.MRTRKey, fmt.Sprintf("%d@%s", os.Getpid(), host))
	var mismatch *keycheck.MismatchError
	switch {
	case errors.As(err, &mismatch):
		d.Logger.Error(mismatch.Error(), zap.String("key_fingerprint", mismatch.Mine.Fingerprint),
			zap.String("other_key_fingerprint", mismatch.Theirs.Fingerprint), zap.String("other_replica", mismatch.Theirs.Identity))
	case err != nil:
		d.Logger.Warn("could not compare the MRTR key with other replicas' (set "+config.EnvMRTRKey+" to the same value on every replica)", zap.Error(err))
	}
}

// derivedKey derives a key of its own for purpose from the MRTR key, so
// that replicas sharing OPENWOP_MRTR_KEY agree on it (listRuns cursors,
// the runIds of idempotent calls); nil (a random key per process) without
// one.
func derivedKey(mrtrKey []byte, purpose string) []byte {
	if len(mrtrKey) == 0 {
		return nil
	}
	mac := hmac.New(sha256.New, mrtrKey)
	mac.Write([]byte(purpose))
	return mac.Sum(nil)
}
