package core

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/requeststate"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry"
)

// Metrics records what the core does; the mount's Recorder implements it.
// Methods must be safe for concurrent use and cheap.
type Metrics interface {
	// BlockingCall records a task-less tools/call that starts (+1) or
	// stops (-1) waiting for its run.
	BlockingCall(delta int)
	// OwnershipCancelled records a run cancelled because the request that
	// owned it went away before its response was sent.
	OwnershipCancelled()
	// MRTRRound records an InputRequiredResult sent.
	MRTRRound()
}

// Options configure a Core. Runs, Catalog, Log and States are required;
// the mount's Options document the rest.
type Options struct {
	Runs    runs.Backend
	Catalog catalog.Source
	OAuth   *auth.OAuth
	// ScopeRefused learns of each call refused for want of scope (nil: none).
	ScopeRefused auth.ScopeRefused
	Log          *zap.Logger
	Metrics      Metrics // nil: none
	Admission    *admission.Controller
	// Tracer traces the core's work on runs (nil: none); RunTrace reads
	// the trace a run was started in (nil: none).
	Tracer   trace.Tracer
	RunTrace func(ctx context.Context, caller signals.Subject, runID string) (trace.SpanContext, error)
	// Pacer learns how long each tool's runs take from the runs the core
	// sees end (nil: none).
	Pacer *Pacer
	// States seals and opens the requestState of MRTR rounds.
	States    *requeststate.Codec
	MaxRounds int
	MaxWait   time.Duration
	KeepAlive time.Duration
	// InlineWait is how long a call that took a task waits for its run
	// before the task is answered, for a tool that sets none (0: none).
	InlineWait time.Duration
	// NoCompanions turns the companion tools off (see CompanionStatus): a
	// client that can neither take a task nor answer a question is then
	// refused a call of a tool that may ask one, as before.
	NoCompanions bool
	// ResultLimit is the size in bytes over which a run's result is
	// answered with its head and a resource_link (RunResult; 0 or less:
	// none).
	ResultLimit int
	// NoRunList turns the list tool off (CompanionList), which is
	// otherwise listed to every client.
	NoRunList bool
	// AfterStart, when set (tests only), runs between a run's start and
	// the answer to the request that started it.
	AfterStart func(runID string)
}

// Core serves the MCP operations on runs for every dialect.
type Core struct {
	runs      runs.Backend
	catalog   catalog.Source
	oauth     *auth.OAuth
	refused   auth.ScopeRefused
	log       *zap.Logger
	metrics   Metrics
	admission *admission.Controller
	// tracing ties the core's spans to the traces of runs.
	tracing    runTracing
	pacer      *Pacer
	states     *requeststate.Codec
	tracker    *ownership.Tracker
	maxRounds  int
	inlineWait time.Duration
	maxWait    time.Duration
	keepAlive  time.Duration
	afterStart func(runID string)
	// resultLimit is Options.ResultLimit.
	resultLimit int
	// companions are the companion tools (nil: off).
	companions *companions
	// runList serves the list tool (nil: off).
	runList *runList
	// tasks are the task operations (Tasks).
	tasks *Tasks
}

// New builds the core, and the ownership tracker its requests are tracked
// by (Tracker): a run whose owning request went away is cancelled with
// reason mcp-request-cancelled.
func New(opts Options) (*Core, error) {
	m := &Core{
		runs: opts.Runs, catalog: opts.Catalog, oauth: opts.OAuth, refused: opts.ScopeRefused, log: opts.Log,
		metrics: opts.Metrics, admission: opts.Admission, pacer: opts.Pacer, states: opts.States,
		maxRounds: opts.MaxRounds, inlineWait: opts.InlineWait, maxWait: opts.MaxWait, keepAlive: opts.KeepAlive, afterStart: opts.AfterStart,
		resultLimit: opts.ResultLimit,
	}
	m.tasks = &Tasks{core: m}
	m.tracing = runTracing{tracer: opts.Tracer, log: opts.Log}
	if opts.Tracer != nil {
		m.tracing.runTrace = opts.RunTrace
	}
	if !opts.NoCompanions {
		c, err := newCompanions(m)
		if err != nil {
			return nil, err
		}
		m.companions = c
	}
	if !opts.NoRunList {
		l, err := newRunList(m)
		if err != nil {
			return nil, err
		}
		m.runList = l
	}
	m.tracker = ownership.NewTracker(m.cancelUnowned, m.log)
	m.tracker.OnRelease(m.runs.Release)
	return m, nil
}

// Tracker is the ownership tracker of the requests the core serves: each
// transport wraps its requests in it.
func (m *Core) Tracker() *ownership.Tracker { return m.tracker }

// Caller returns the authenticated Subject the transport put in ctx.
func (m *Core) Caller(ctx context.Context) (signals.Subject, error) {
	s, ok := auth.SubjectFrom(ctx)
	if !ok {
		m.log.Error("request reached the MCP server without an authenticated subject")
		return signals.Subject{}, Internal()
	}
	return s, nil
}

// cancelUnowned cancels the run of a request that went away before its
// response was delivered (the ownership tracker's cancel).
func (m *Core) cancelUnowned(ctx context.Context, caller signals.Subject, runID string) error {
	if m.metrics != nil {
		m.metrics.OwnershipCancelled()
	}
	ctx = m.tracing.runContext(ctx, caller, runID)
	_, err := m.runs.Cancel(ctx, caller, runID, signals.ReasonMCPRequestCancelled)
	if errors.Is(err, runs.ErrTerminal) {
		return nil
	}
	return err
}

// ScopeRefusal is the refusal of a call of the tool by caller when the
// caller's token lacks one of the tool's scopes, nil when it grants them
// all (or is not scoped). The refusal is reported (Options.ScopeRefused).
func (m *Core) ScopeRefusal(caller signals.Subject, spec signals.ToolSpec) *auth.Refusal {
	refusal := m.oauth.ToolRefusal(caller, "tool", spec.Name, spec.Scopes)
	if refusal == nil {
		return nil
	}
	if m.refused != nil {
		m.refused(caller, signals.TransportMCP, spec.Name, refusal.Scopes)
	}
	return refusal
}

// RunLog is the core's logger with the fields of the run runID of tool.
func (m *Core) RunLog(ctx context.Context, runID, tool string) *zap.Logger {
	return m.log.With(telemetry.RunFields(ctx, runID, tool)...)
}
