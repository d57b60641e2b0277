package mcpmount

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/edge"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/modern"
	"github.com/openwop/temporal-mcp/mcpmount/internal/requeststate"
	"github.com/openwop/temporal-mcp/mcpmount/internal/session"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// Options configure a Mount.
type Options struct {
	// Kit, when set, is what the mount shares with the REST API, built
	// once (edge.New): the run service, the catalog, the authenticator,
	// the request gate, tracing, admission and the MRTR round cap. The
	// fields that are edge.Options' too (Runs, Catalog, Authenticate,
	// OAuth, ScopeRefused, PublicURL, AllowedOrigins, AllowedHosts,
	// TracerProvider, RunTrace, Admission, MRTRMaxRounds) are then
	// ignored. Nil: New builds the mount's own from those fields.
	Kit *edge.Kit

	// Runs starts and operates runs (edge.Options.Runs). Required
	// without a Kit.
	Runs runs.Backend
	// Catalog is where tools come from (edge.Options.Catalog). Required
	// without a Kit.
	Catalog catalog.Source
	// Authenticate resolves the caller of each request from its
	// credentials (edge.Options.Authenticate). Nil is development mode:
	// every caller is auth.Anonymous().
	Authenticate auth.Authenticator
	// OAuth is the resource server whose tokens Authenticate accepts, if
	// any (edge.Options.OAuth). A caller whose token lacks a scope a tool
	// needs does not see the tool in tools/list, and its tools/call is
	// refused before any run starts: over HTTP with 403 and OAuth's
	// insufficient_scope challenge, over stdio with a JSON-RPC error
	// naming the scopes.
	OAuth *auth.OAuth
	// ScopeRefused learns of each tools/call refused for want of a tool's
	// scope (edge.Options.ScopeRefused). Nil: none.
	ScopeRefused auth.ScopeRefused
	// Logger receives operational logs; nil means no logging.
	Logger *zap.Logger
	// Name and Version identify the server (serverInfo). Defaults:
	// "openwop-temporal-mcp", "dev".
	Name, Version string
	// Instructions is the optional server/discover instructions text.
	Instructions string
	// PublicURL, AllowedOrigins and AllowedHosts are the settings of
	// the request gate (Host and Origin; edge.Options.PublicURL,
	// AllowedOrigins and AllowedHosts), shared with the REST API: the
	// configured external URL of the server, whose host and origin pass,
	// and the further Origin and Host header values that pass. Empty:
	// a request that arrived on a loopback address must name a loopback
	// Host, and carry a localhost Origin or none.
	PublicURL      string
	AllowedOrigins []string
	AllowedHosts   []string
	// PollInterval is the pollIntervalMs suggested on the tasks of a tool
	// whose runs this mount never saw end; once it saw some, a task's
	// interval is a tenth of how long they took (100 ms..15 s). Four times
	// that while a task waits for its input. Default 500 ms.
	PollInterval time.Duration
	// InlineWait is how long a tools/call that may take a task (the
	// client declared the Tasks extension, or a 2025-11-25 params.task)
	// waits for its run before it is answered with the task, for a tool
	// that sets none (signals.ToolSpec.InlineWait): a run that ends within
	// it is answered with its result, as a blocking call would be, and a
	// run that asks a question is answered with its task at once. The
	// call owns the run while it waits. Default: PollInterval, so that no
	// client waits longer than its first poll would have; negative: none
	// (the task at once).
	InlineWait time.Duration
	// NoCompanionTools turns the companion tools off. They are on by
	// default: a request that did not declare the Tasks extension (nor,
	// in a session, a 2025-11-25 params.task or capabilities.tasks) sees
	// three more tools in tools/list, openwop_run_status,
	// openwop_run_answer and openwop_run_cancel, with which the model
	// follows a run; its call that outlasts MaxBlockingWait, and, when it
	// did not declare elicitation either, its call of a tool that may ask
	// a question, is answered with the run's status and what to call next
	// instead of an isError or a -32021 refusal (docs/protocol.md,
	// "Companion tools").
	NoCompanionTools bool
	// ResultLimit is the size, in bytes of text, over which a run's result
	// is answered with its head inline and a resource_link to the whole,
	// which resources/read serves in pages of this size (the text, and the
	// structuredContent, each a resource of the run). Default
	// DefaultResultLimit, which fits the smallest host limit known;
	// negative: none (docs/protocol.md, "Large results").
	ResultLimit int
	// NoRunListTool turns the list tool off. It is on by default and
	// listed to every client: openwop_run_list lists the caller's runs as
	// GET /runs does (newest first, by tool and status, paged), each with
	// its runId and taskId, so that a client that lost a handle finds it
	// again (the Tasks extension has no tasks/list).
	NoRunListTool bool
	// CacheTTL is the ttlMs of server/discover and tools/list. Default
	// DefaultCacheTTL, short so that clients see a tool a new worker
	// published within seconds.
	CacheTTL time.Duration
	// MaxBodyBytes bounds a request body. Default 4 MiB.
	MaxBodyBytes int64

	// MRTRKey is the HMAC key (at least 32 bytes) that protects the
	// requestState of InputRequiredResults, the rounds of multi-round-trip
	// requests (MRTR: a task-less call answered with the run's questions,
	// retried with their answers). Nil means a random key per process, so
	// states do not survive a restart or work across replicas.
	MRTRKey []byte
	// MRTRMaxRounds caps the input rounds (multi-round-trip requests) of
	// one task-less call (edge.Options.MRTRMaxRounds: 1..16, default
	// DefaultMRTRMaxRounds). Past it the run is cancelled and the call
	// answered isError (mcp_mrtr_rounds_exceeded).
	MRTRMaxRounds int
	// MRTRStateTTL is how long the requestState of a multi-round-trip
	// request (MRTR) round stays valid. Default 15 min.
	MRTRStateTTL time.Duration
	// MaxBlockingWait bounds how long a task-less tools/call waits for its
	// run, for a tool that sets no bound of its own
	// (signals.ToolSpec.HandoffAfter). At the bound the call is answered
	// with a handoff, the run's status and what to call next (its
	// companion tools; with them off, or to a 2025-11-25 session that
	// declared capabilities.tasks, an isError naming the run and
	// tasks/get); the run goes on, and the delivered response hands it
	// over like a CreateTaskResult. It also bounds the waitSeconds of
	// openwop_run_status. Default DefaultMaxBlockingWait.
	MaxBlockingWait time.Duration
	// KeepAlive is the interval of SSE comment lines on a waiting blocking
	// call, and of the progress notifications of a call that asked for
	// them while its run does not change. Default 15 s.
	KeepAlive time.Duration

	// SessionIdleTimeout ends an HTTP session of the session dialect
	// (2025-06-18, 2025-11-25) that has had no POST in flight for this long:
	// its Mcp-Session-Id then answers 404 and the client initializes again.
	// A blocking call keeps its session alive; an open GET stream does not.
	// Default 30 min.
	SessionIdleTimeout time.Duration
	// MaxSessions bounds the HTTP sessions of the session dialect open at
	// once; an initialize past it is answered 503. Default 10000.
	MaxSessions int
	// TracerProvider traces requests (edge.Options.TracerProvider): each
	// request is a server span, the child of the traceparent of its
	// params._meta or, without one, of its HTTP headers, and the run
	// service's Temporal calls are its children when the Temporal client
	// has the tracing interceptor (telemetry.TemporalInterceptor). Nil:
	// nothing is traced, at no cost.
	TracerProvider trace.TracerProvider
	// RunTrace returns the span context of the request that started a run
	// (edge.Options.RunTrace). With a TracerProvider, the span of a
	// request about a run links to it, and the cancellation of a run whose
	// request went away is traced in it. Nil: neither.
	RunTrace func(ctx context.Context, caller signals.Subject, runID string) (trace.SpanContext, error)
	// Metrics records the mount's metrics (telemetry/export.Metrics). Nil: none.
	Metrics Recorder

	// Admission bounds the run starts and waiting blocking calls
	// (edge.Options.Admission, one Controller shared with the REST API).
	// A tools/call over a limit is refused before any run starts: a
	// JSON-RPC error -32603 whose data holds retryAfter (seconds) and the
	// reason, with HTTP status 503 and a Retry-After header for a
	// 2026-07-28 request over HTTP (a session-dialect request gets status
	// 200 and the header). Nil: no limits.
	Admission *admission.Controller
}

// Defaults of Options.
const (
	DefaultCacheTTL = 5 * time.Second
	// DefaultMRTRMaxRounds caps the input rounds of one task-less
	// tools/call under multi-round-trip requests (MRTR) when none is
	// configured: edge.DefaultMRTRMaxRounds, which the OpenWOP discovery
	// document (restapi) advertises as mcp.mrtr.maxRounds.
	DefaultMRTRMaxRounds = edge.DefaultMRTRMaxRounds
	DefaultMRTRStateTTL  = 15 * time.Minute
	// DefaultMaxBlockingWait is below the shortest tool-call limit of
	// the common MCP hosts (Claude's desktop app, about 60 s), with room
	// for the handoff to reach the host (docs/protocol.md, "Host limits").
	DefaultMaxBlockingWait = 45 * time.Second
	DefaultKeepAlive       = 15 * time.Second
	DefaultSessionIdle     = 30 * time.Minute
	DefaultMaxSessions     = 10000
	// DefaultResultLimit is the result limit (Options.ResultLimit), in
	// bytes: 50,000, under Claude Code's 25,000 tokens of a tool result at
	// two bytes a token, the smallest host limit known.
	DefaultResultLimit = core.DefaultResultLimit
)

// Mount is the MCP endpoint. It is an http.Handler for the /mcp path.
type Mount struct {
	// core serves the operations on runs for every dialect; modern and
	// session are the dialects.
	core    *core.Core
	modern  *modern.Dialect
	session *session.Dialect
	// What the intake needs: the gate, the authenticator, the bound on a
	// body, the catalog for scope refusals, the request observer.
	gate         *edge.Kit
	authenticate auth.Authenticator
	maxBody      int64
	catalog      catalog.Source
	obs          wire.Observer
	log          *zap.Logger
	// endListening ends every subscriptions/listen stream (Shutdown).
	endListening context.CancelFunc
	// afterStart, when set (tests only), runs between a run's start and
	// the answer to the request that started it.
	afterStart func(runID string)
}

// New builds the mount. It fails on a catalog it cannot serve: a duplicate
// tool name or a schema that does not compile.
func New(opts Options) (*Mount, error) {
	kit, err := kitOf(opts)
	if err != nil {
		return nil, fmt.Errorf("mcpmount: %w", err)
	}
	if err := applyDefaults(&opts); err != nil {
		return nil, err
	}
	authenticate := kit.Authenticate()
	if authenticate == nil {
		authenticate = auth.AnonymousAuthenticator
	}
	m := &Mount{authenticate: authenticate, log: opts.Logger, catalog: kit.Catalog(), maxBody: opts.MaxBodyBytes, gate: kit}
	states, err := newStates(opts)
	if err != nil {
		return nil, err
	}
	m.obs.Tracer = kit.Tracer("mcpmount")
	if opts.Metrics != nil {
		m.obs.Metrics = opts.Metrics
		m.obs.Label = methodLabel
	}
	pacer := core.NewPacer(opts.PollInterval)
	m.core, err = core.New(core.Options{
		Runs: kit.Runs(), Catalog: kit.Catalog(), OAuth: kit.OAuth(), ScopeRefused: kit.ScopeRefused(),
		Log: m.log, Metrics: opts.Metrics, Admission: kit.Admission(), Tracer: m.obs.Tracer, RunTrace: kit.RunTrace(),
		Pacer: pacer, States: states, MaxRounds: kit.MRTRMaxRounds(), MaxWait: opts.MaxBlockingWait, KeepAlive: opts.KeepAlive,
		InlineWait: max(opts.InlineWait, 0), NoCompanions: opts.NoCompanionTools, ResultLimit: opts.ResultLimit, NoRunList: opts.NoRunListTool,
		AfterStart: func(runID string) {
			if m.afterStart != nil {
				m.afterStart(runID)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("mcpmount: %w", err)
	}
	proj := wire.Projector{Pacer: pacer, ResultLimit: opts.ResultLimit}
	lister := wire.Lister{Core: m.core, Catalog: kit.Catalog(), Log: m.log, CacheTTLMs: opts.CacheTTL.Milliseconds()}
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}}
	caps.AddExtension(ExtensionTasks, map[string]any{})
	impl := &mcp.Implementation{Name: opts.Name, Version: opts.Version}
	var listening context.Context
	listening, m.endListening = context.WithCancel(context.Background())
	parts := wire.Parts{Core: m.core, Projector: proj, Observer: m.obs, Lister: lister, Results: core.NewResults(m.core), Log: m.log,
		Capabilities: caps, Implementation: impl, Instructions: opts.Instructions, CacheTTLMs: opts.CacheTTL.Milliseconds(),
		KeepAlive: opts.KeepAlive}
	m.modern = modern.New(modern.Options{Parts: parts, Listening: listening})
	m.session, err = session.New(session.Options{Parts: parts, Authenticate: authenticate,
		MaxBodyBytes: opts.MaxBodyBytes, SessionIdleTimeout: opts.SessionIdleTimeout, MaxSessions: opts.MaxSessions})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// newStates builds the codec of MRTR requestStates.
func newStates(opts Options) (*requeststate.Codec, error) {
	key := opts.MRTRKey
	if key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("mcpmount: generate MRTR key: %w", err)
		}
	}
	states, err := requeststate.NewCodec(key, opts.MRTRStateTTL, nil)
	if err != nil {
		return nil, fmt.Errorf("mcpmount: %w", err)
	}
	return states, nil
}

// ServeStdio serves one MCP client over a newline-delimited message stream
// (stdin and stdout for a local client) as caller, until the input ends or
// ctx is done. The request-ownership rule holds as on HTTP: a call owns the
// run it starts or continues until its response is written; a
// notifications/cancelled naming the call, or the end of the input, cancels
// the runs the unanswered calls own (reason mcp-request-cancelled).
// ServeStdio returns once those cancellations are done. Nothing but MCP
// messages is written to out.
func (m *Mount) ServeStdio(ctx context.Context, caller signals.Subject, in io.ReadCloser, out io.WriteCloser) error {
	// 2026-07-28 requests go to the modern dialect, the others to the
	// session dialect.
	return m.session.ServeStdio(ctx, caller, in, out, session.Divert{Takes: modern.Takes, Serve: m.modern.ServeMessage})
}

// Shutdown ends the mount's long-lived streams, so that a graceful HTTP
// shutdown is not held by streams that never end by themselves: every
// subscriptions/listen stream ends, now and from now on, with its listen
// result, and every HTTP session of the session dialect is closed (a session
// closes once its calls in flight have returned; its GET stream then ends).
// Clients may start new sessions afterwards. Call it as the server starts
// shutting down (http.Server.RegisterOnShutdown). It returns when every
// session is closed, or with ctx's error when ctx ends first.
func (m *Mount) Shutdown(ctx context.Context) error {
	m.endListening()
	return m.session.Shutdown(ctx)
}

// kitOf is opts.Kit, or the Kit of the fields of opts that are
// edge.Options'.
func kitOf(opts Options) (*edge.Kit, error) {
	if opts.Kit != nil {
		return opts.Kit, nil
	}
	return edge.New(edge.Options{
		Runs: opts.Runs, Catalog: opts.Catalog, Authenticate: opts.Authenticate, OAuth: opts.OAuth,
		ScopeRefused: opts.ScopeRefused, PublicURL: opts.PublicURL, AllowedHosts: opts.AllowedHosts,
		AllowedOrigins: opts.AllowedOrigins, TracerProvider: opts.TracerProvider, RunTrace: opts.RunTrace,
		Admission: opts.Admission, MRTRMaxRounds: opts.MRTRMaxRounds,
	})
}

// applyDefaults checks opts and fills in the defaults of the settings the
// mount does not share with the REST API.
func applyDefaults(opts *Options) error {
	if opts.CacheTTL < 0 {
		return errors.New("mcpmount: Options.CacheTTL must not be negative")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	opts.Name = cmp.Or(opts.Name, "openwop-temporal-mcp")
	opts.Version = cmp.Or(opts.Version, "dev")
	orDefault(&opts.PollInterval, 500*time.Millisecond)
	opts.InlineWait = cmp.Or(opts.InlineWait, opts.PollInterval)
	orDefault(&opts.CacheTTL, DefaultCacheTTL)
	if opts.ResultLimit == 0 {
		opts.ResultLimit = DefaultResultLimit
	}
	orDefault(&opts.MaxBodyBytes, 4<<20)
	orDefault(&opts.MRTRStateTTL, DefaultMRTRStateTTL)
	orDefault(&opts.MaxBlockingWait, DefaultMaxBlockingWait)
	orDefault(&opts.KeepAlive, DefaultKeepAlive)
	orDefault(&opts.SessionIdleTimeout, DefaultSessionIdle)
	orDefault(&opts.MaxSessions, DefaultMaxSessions)
	return nil
}

// orDefault sets *v to def unless it is positive.
func orDefault[T time.Duration | int64 | int](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// MetaIdempotencyKey is the params._meta key of a tools/call that makes the
// call idempotent: calls of one tenant with the same tool and key start at
// most one run (docs/protocol.md, "Idempotent calls"). MCP defines no such
// key yet, so it is this server's own.
const MetaIdempotencyKey = core.MetaIdempotencyKey

// MetaAnswerers is the params._meta key of an input request (an entry of
// inputRequests) that says who may answer the question and whether the
// caller that read it may: {"approvers": [...]} or {"anyone": true}, and
// "callerMay" (docs/protocol.md, "Who may answer").
const MetaAnswerers = core.MetaAnswerers

// MetaExpiresAt is the params._meta key of an input request whose question
// has a deadline: when it expires unanswered (RFC 3339). The run then
// withdraws it, and a late answer resolves nothing.
const MetaExpiresAt = core.MetaExpiresAt

// ExtensionTasks is the id of the MCP Tasks extension this mount implements
// (revision 2026-07-28).
const ExtensionTasks = core.ExtensionTasks

// ProtocolVersion is the per-request (stateless) MCP revision the mount
// serves. Requests without the per-request _meta triple are served by the
// session dialect (the go-sdk).
const ProtocolVersion = wire.ProtocolVersion

// Recorder records the mount's metrics. telemetry/export.Metrics implements
// it on a Prometheus registry. Methods must be safe for concurrent use and
// cheap: they run on every request.
type Recorder interface {
	// Request records one answered request: its JSON-RPC method (one of
	// a fixed set, "other" for the rest, "unknown" when the body had
	// none), its outcome and its latency. The outcome is "ok" (a
	// result), "tool_error" (a CallToolResult with isError),
	// "input_required" (an InputRequiredResult), "task" (a
	// CreateTaskResult), "error" (a JSON-RPC error), "cancelled" (the
	// client went away) or "rejected" (refused before any method ran:
	// gate, credential, body, headers, version).
	Request(method, outcome string, d time.Duration)
	// SSEStream records an SSE response stream that opens (+1) or
	// closes (-1).
	SSEStream(delta int)
	// AdmissionRejected records a request refused by admission control,
	// with a short fixed reason.
	AdmissionRejected(reason string)
	// BlockingCall records a task-less tools/call that starts (+1) or
	// stops (-1) waiting for its run.
	BlockingCall(delta int)
	// OwnershipCancelled records a run cancelled because the request that
	// owned it went away before its response was sent.
	OwnershipCancelled()
	// MRTRRound records an InputRequiredResult sent.
	MRTRRound()
}

// methodLabel is the metric label of method: the one the 2026-07-28
// dialect's method table gives it, or else the session dialect's. A request is
// counted before the mount knows its dialect (a refusal at the door), so
// both tables label every method alike.
func methodLabel(method string) (string, bool) {
	if l, ok := modern.Label(method); ok {
		return l, true
	}
	return session.Label(method)
}
