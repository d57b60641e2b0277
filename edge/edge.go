package edge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/httpgate"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry"
)

// Limits of multi-round-trip requests (MRTR: a task-less tools/call
// answered with an InputRequiredResult, retried with the answers, and so
// on).
const (
	// DefaultMRTRMaxRounds caps the input rounds of one task-less
	// tools/call when Options.MRTRMaxRounds is 0. The OpenWOP discovery
	// document advertises the cap as mcp.mrtr.maxRounds.
	DefaultMRTRMaxRounds = 8
	// MaxMRTRMaxRounds is the largest cap Options.MRTRMaxRounds may set.
	MaxMRTRMaxRounds = 16
)

// RunTrace returns the span context of the request that started a run
// (runs.Service.StartTrace; invalid when it was not traced).
type RunTrace func(ctx context.Context, caller signals.Subject, runID string) (trace.SpanContext, error)

// Options are the settings the edges share.
type Options struct {
	// Runs starts and operates runs. Required.
	Runs runs.Backend
	// Catalog is where tools come from: catalog.Live for the tools live
	// workers published, catalog.Static for a fixed list. The edges start
	// only its tools, and check the results of completed runs against
	// their output schemas. Required.
	Catalog catalog.Source
	// Authenticate resolves the caller of each request from its
	// credentials, e.g. (*auth.Keys).Authenticate. The MCP mount treats
	// nil as development mode (every caller is auth.Anonymous()); the
	// REST API requires one.
	Authenticate auth.Authenticator
	// OAuth is the resource server whose tokens Authenticate accepts, if
	// any. A caller whose token lacks a scope a tool needs
	// (signals.ToolSpec.Scopes) does not see the tool, and its call is
	// refused before any run starts with OAuth's insufficient_scope
	// challenge (OAuth.InsufficientScope). Nil: the challenge names no
	// metadata.
	OAuth *auth.OAuth
	// ScopeRefused learns of each call refused for want of a tool's scope
	// (the assembly passes audit.Trail.ScopeRefused). Nil: none.
	ScopeRefused auth.ScopeRefused
	// PublicURL, when set, is the absolute external URL of the server
	// (e.g. "https://wop.example.com"; OPENWOP_PUBLIC_URL): its host and
	// origin pass the request gate, and absolute URLs in responses start
	// with it. When empty they are built from the address the connection
	// arrived on, never from the request's Host header. New refuses a
	// PublicURL that is not an absolute http(s) URL.
	PublicURL string
	// AllowedHosts lists further Host header values (host or host:port)
	// the gate accepts. A request that arrived on a loopback address must
	// name a loopback Host or one of these (DNS-rebinding protection);
	// with hosts configured (here or by PublicURL) a request on another
	// address must name one of them.
	AllowedHosts []string
	// AllowedOrigins lists the Origin header values (scheme://host[:port])
	// accepted besides none at all. Localhost origins are accepted when the
	// request arrived on a loopback address.
	AllowedOrigins []string
	// TracerProvider traces requests (telemetry/export.NewTracerProvider):
	// each request is a server span. Nil: nothing is traced, at no cost.
	TracerProvider trace.TracerProvider
	// RunTrace, with a TracerProvider, links the span of a request about
	// a run to the trace the run was started in. Nil: not linked.
	RunTrace RunTrace
	// Admission bounds the run starts and waiting blocking calls of both
	// edges; a call over a limit is refused before any run starts. Nil: no
	// limits.
	Admission *admission.Controller
	// MRTRMaxRounds caps the input rounds of one task-less tools/call
	// (1..MaxMRTRMaxRounds; 0 means DefaultMRTRMaxRounds): the MCP mount
	// enforces it, the REST API's discovery document advertises it.
	MRTRMaxRounds int
}

// Kit is what the edges share, built once by New.
type Kit struct {
	opts Options
	gate *httpgate.Gate
	runs runs.Backend
}

// New builds the Kit of opts: the request gate, the run service with the
// output check applied, the MRTR limits checked and defaulted. A missing
// Runs or Catalog, an MRTRMaxRounds out of range and a PublicURL that is
// not an absolute http(s) URL are errors.
func New(opts Options) (*Kit, error) {
	switch {
	case opts.Runs == nil:
		return nil, errors.New("edge: Options.Runs is required")
	case opts.Catalog == nil:
		return nil, errors.New("edge: Options.Catalog is required")
	}
	opts.MRTRMaxRounds = cmp.Or(opts.MRTRMaxRounds, DefaultMRTRMaxRounds)
	if opts.MRTRMaxRounds < 1 || opts.MRTRMaxRounds > MaxMRTRMaxRounds {
		return nil, fmt.Errorf("edge: Options.MRTRMaxRounds %d is outside 1..%d", opts.MRTRMaxRounds, MaxMRTRMaxRounds)
	}
	gate, err := httpgate.New(httpgate.Options{
		PublicURL: opts.PublicURL, AllowedHosts: opts.AllowedHosts, AllowedOrigins: opts.AllowedOrigins,
	})
	if err != nil {
		return nil, err
	}
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	return &Kit{opts: opts, gate: gate, runs: runs.Amend(opts.Runs, catalog.OutputCheck(opts.Catalog))}, nil
}

// Runs is the run service with the output check applied.
func (k *Kit) Runs() runs.Backend { return k.runs }

// Catalog is the catalog of Options.Catalog.
func (k *Kit) Catalog() catalog.Source { return k.opts.Catalog }

// Authenticate is Options.Authenticate (possibly nil).
func (k *Kit) Authenticate() auth.Authenticator { return k.opts.Authenticate }

// OAuth is Options.OAuth (possibly nil).
func (k *Kit) OAuth() *auth.OAuth { return k.opts.OAuth }

// ScopeRefused is Options.ScopeRefused (possibly nil).
func (k *Kit) ScopeRefused() auth.ScopeRefused { return k.opts.ScopeRefused }

// PublicURL is Options.PublicURL without a trailing slash ("" when none).
func (k *Kit) PublicURL() string { return k.opts.PublicURL }

// CheckHostOrigin checks a request's Host and Origin headers against the
// public URL and the allowed hosts and origins: the request gate every
// route of both edges passes first. It returns nil for a request that
// passes, and otherwise an error whose message names the refused header
// and its value (with the HTTP status, 403, for errors.As in this module).
func (k *Kit) CheckHostOrigin(r *http.Request) error {
	if rej := k.gate.CheckHostOrigin(r); rej != nil {
		return rej
	}
	return nil
}

// CheckRequest is CheckHostOrigin and, for a request with a body, the
// check of its JSON content type (status 415).
func (k *Kit) CheckRequest(r *http.Request) error {
	if rej := k.gate.Check(r); rej != nil {
		return rej
	}
	return nil
}

// Tracer is the tracer of the edge named name (a scope under
// telemetry.ScopeName), or nil when nothing is traced.
func (k *Kit) Tracer(name string) trace.Tracer {
	if k.opts.TracerProvider == nil {
		return nil
	}
	return k.opts.TracerProvider.Tracer(telemetry.ScopeName + "/" + name)
}

// RunTrace is Options.RunTrace (possibly nil).
func (k *Kit) RunTrace() RunTrace { return k.opts.RunTrace }

// Admission is Options.Admission (possibly nil).
func (k *Kit) Admission() *admission.Controller { return k.opts.Admission }

// MRTRMaxRounds is the cap of input rounds of one task-less tools/call.
func (k *Kit) MRTRMaxRounds() int { return k.opts.MRTRMaxRounds }
