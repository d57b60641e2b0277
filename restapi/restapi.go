package restapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/edge"
	"github.com/openwop/temporal-mcp/internal/httpgate"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/telemetry"
)

// Defaults of Options.
const (
	// DefaultMCPPath is where the MCP mount is served.
	DefaultMCPPath = "/mcp"
	// MaxPollTimeout is the longest long-poll events/poll accepts.
	MaxPollTimeout = 60 * time.Second
	// maxBodyBytes caps request bodies.
	maxBodyBytes = 1 << 20
)

// Options configure the handler returned by New.
type Options struct {
	// Kit, when set, is what the REST API shares with the MCP mount,
	// built once (edge.New): the run service, the catalog, the
	// authenticator, the request gate, tracing, admission and the MRTR
	// round cap. The fields that are edge.Options' too (Runs, Authenticate,
	// OAuth, ScopeRefused, Catalog, PublicURL, AllowedHosts,
	// AllowedOrigins, MRTRMaxRounds, Admission, TracerProvider, RunTrace)
	// are then ignored. Nil: New builds the API's own from those fields.
	Kit *edge.Kit

	// Runs performs the run operations (edge.Options.Runs). Required
	// without a Kit.
	Runs runs.Backend
	// Authenticate resolves the caller of every runs request
	// (edge.Options.Authenticate). Required.
	Authenticate auth.Authenticator
	// OAuth is the resource server whose tokens Authenticate accepts, if
	// any (edge.Options.OAuth). A caller whose token lacks a scope a tool
	// needs (signals.ToolSpec.Scopes) does not see the tool in GET
	// /workflows, and its POST /runs of the tool is refused before any run
	// starts: 403 forbidden with OAuth's insufficient_scope challenge, as
	// the MCP mount refuses its tools/call.
	OAuth *auth.OAuth
	// ScopeRefused learns of each POST /runs refused for want of a tool's
	// scope (edge.Options.ScopeRefused). Nil: none.
	ScopeRefused auth.ScopeRefused
	// Catalog is where tools come from (edge.Options.Catalog). POST /runs
	// starts only its tools, and the fixtures of the discovery document
	// are its tools whose names start with "conformance-" (the OpenWOP
	// fixture ids). Required without a Kit.
	Catalog catalog.Source
	// PublicURL, when set, is the absolute external URL of the server
	// (e.g. "https://wop.example.com"; edge.Options.PublicURL): absolute
	// URLs in responses (Location, statusUrl, eventsUrl, the discovery
	// document's URLs) start with it, and its host and origin pass the
	// request gate. When empty they are built from the address the
	// connection arrived on, never from the request's Host header. New
	// refuses a PublicURL that is not an absolute http(s) URL
	// (internal/app/config checks OPENWOP_PUBLIC_URL).
	PublicURL string
	// BaseURL is the former name of PublicURL, used when PublicURL is
	// empty.
	//
	// Deprecated: set PublicURL, the name the MCP mount uses too.
	BaseURL string
	// AllowedHosts and AllowedOrigins are the further Host and Origin
	// header values the request gate accepts (edge.Options.AllowedHosts
	// and AllowedOrigins, the same checks as the MCP mount's).
	AllowedHosts, AllowedOrigins []string
	// MCPPath is the path of the MCP mount (DefaultMCPPath when empty).
	MCPPath string
	// MRTRMaxRounds is the advertised mcp.mrtr.maxRounds
	// (edge.Options.MRTRMaxRounds: 1..16, edge.DefaultMRTRMaxRounds when
	// 0). Give the mount and the API one Kit, and what is advertised is
	// what the mount enforces.
	MRTRMaxRounds int
	// Admission bounds the run starts (edge.Options.Admission, one
	// Controller shared with the MCP mount). A POST /runs over a limit is
	// refused before any run starts: 503 overloaded with a Retry-After
	// header. Nil: no limits.
	Admission *admission.Controller
	// Logger receives unexpected errors (zap.NewNop() when nil).
	Logger *zap.Logger
	// Now is the clock (time.Now when nil). It stamps refreshedAt.
	Now func() time.Time
	// TracerProvider traces requests (edge.Options.TracerProvider): each
	// is a server span, the child of the request's traceparent header.
	// Nil: nothing is traced.
	TracerProvider trace.TracerProvider
	// RunTrace returns the span context of the request that started a run
	// (edge.Options.RunTrace). With a TracerProvider, the span of a
	// request about a run links to it. Nil: not linked.
	RunTrace func(ctx context.Context, caller signals.Subject, runID string) (trace.SpanContext, error)
}

// handler serves the REST API.
type handler struct {
	// kit is what the API shares with the MCP mount.
	kit     *edge.Kit
	log     *zap.Logger
	mcpPath string
	// refreshedAt is when the discovery document was built.
	refreshedAt time.Time
	traced      bool // requests are traced: link them to their run's trace
}

// New returns the handler serving the discovery document and the REST runs
// API. It uses Go 1.22 ServeMux patterns, so run ids in paths may use either
// the projected form (tenant~2Fopaque) or a percent-encoded slash
// (tenant%2Fopaque).
//
// Every request passes the request gate first, whatever its path: a Host or
// Origin the gate refuses is 403 forbidden, a body that is not
// application/json 415 unsupported_media_type, before authentication.
//
// An invalid option (a PublicURL that is not an absolute http(s) URL) is
// an error.
func New(opts Options) (http.Handler, error) {
	kit, err := kitOf(opts)
	if err != nil {
		return nil, fmt.Errorf("restapi: %w", err)
	}
	h := &handler{kit: kit, log: cmp.Or(opts.Logger, zap.NewNop()), mcpPath: cmp.Or(opts.MCPPath, DefaultMCPPath)}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	h.refreshedAt = now().UTC().Truncate(time.Second)

	mux := http.NewServeMux()
	routes := []struct {
		method, path string
		serve        http.HandlerFunc
	}{
		{http.MethodGet, "/.well-known/openwop", h.discovery},
		{http.MethodGet, "/openapi.json", h.openAPI},
		{http.MethodGet, "/workflows", h.authed(h.listWorkflows)},
		{http.MethodGet, "/runs", h.authed(h.listRuns)},
		{http.MethodPost, "/runs", h.authed(h.createRun)},
		{http.MethodGet, "/runs/{runId}", h.authedRun(h.getRun)},
		{http.MethodPost, "/runs/{runId}/cancel", h.authedRun(h.cancelRun)},
		{http.MethodGet, "/runs/{runId}/events/poll", h.authedRun(h.pollEvents)},
		{http.MethodPost, "/runs/{runId}/interrupts/{nodeId}", h.authedRun(h.resolveInterrupt)},
	}
	allowed := map[string][]string{}
	for _, rt := range routes {
		mux.HandleFunc(rt.method+" "+rt.path, rt.serve)
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	// Method-less fallbacks answer other methods with a JSON 405 (the
	// method-specific patterns above are more specific and win).
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		if containsString(methods, http.MethodGet) {
			allow += ", HEAD"
		}
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed",
				fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, path, allow))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.URL.Path)
	})
	var serve http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rej := (*httpgate.Rejection)(nil); errors.As(kit.CheckRequest(r), &rej) {
			writeError(w, rej.Status, rej.Code, rej.Message)
			return
		}
		mux.ServeHTTP(w, r)
	})
	if tracer := kit.Tracer("restapi"); tracer != nil {
		h.traced = true
		serve = traced(tracer, serve)
	}
	return serve, nil
}

// kitOf is opts.Kit, or the Kit of the fields of opts that are
// edge.Options'.
func kitOf(opts Options) (*edge.Kit, error) {
	if opts.Kit != nil {
		return opts.Kit, nil
	}
	return edge.New(edge.Options{
		Runs: opts.Runs, Catalog: opts.Catalog, Authenticate: opts.Authenticate, OAuth: opts.OAuth,
		ScopeRefused: opts.ScopeRefused, PublicURL: cmp.Or(opts.PublicURL, opts.BaseURL), AllowedHosts: opts.AllowedHosts,
		AllowedOrigins: opts.AllowedOrigins, TracerProvider: opts.TracerProvider, RunTrace: opts.RunTrace,
		Admission: opts.Admission, MRTRMaxRounds: opts.MRTRMaxRounds,
	})
}

// traced serves each request in a server span, the child of the trace
// context of its headers, named after the route that served it.
func traced(tracer trace.Tracer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := telemetry.Extract(r.Context(), nil, r.Header)
		ctx, span := tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method)))
		defer span.End()
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		if r.Pattern != "" {
			span.SetName(r.Pattern)
			span.SetAttributes(attribute.String("http.route", r.Pattern))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// statusWriter remembers the response status.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status and sends it.
func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// authedHandler is a runs handler that knows its caller.
type authedHandler func(w http.ResponseWriter, r *http.Request, caller signals.Subject)

// authed authenticates the request before calling next.
func (h *handler) authed(next authedHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		caller, err := h.kit.Authenticate()(r)
		if err != nil {
			auth.Challenge(w, err)
			if status := auth.Status(err); status == http.StatusForbidden {
				writeError(w, status, "forbidden", err.Error())
				return
			}
			writeError(w, http.StatusUnauthorized, "unauthenticated", "a valid bearer credential is required: "+err.Error())
			return
		}
		if h.traced {
			h.linkRun(r, caller)
		}
		next(w, r, caller)
	}
}

// runHandler is a handler of a /runs/{runId} route: it knows its caller
// and the decoded run id.
type runHandler func(w http.ResponseWriter, r *http.Request, caller signals.Subject, runID string)

// authedRun authenticates the request and decodes its {runId} (pathRunID)
// before calling next.
func (h *handler) authedRun(next runHandler) http.HandlerFunc {
	return h.authed(func(w http.ResponseWriter, r *http.Request, caller signals.Subject) {
		id, ok := pathRunID(w, r)
		if !ok {
			return
		}
		next(w, r, caller, id)
	})
}

// linkRun links the span of a request about a run to the trace the run
// was started in (Options.RunTrace).
func (h *handler) linkRun(r *http.Request, caller signals.Subject) {
	raw := r.PathValue("runId")
	if raw == "" {
		return
	}
	id, err := runid.Unproject(raw)
	if err != nil {
		return
	}
	span := trace.SpanFromContext(r.Context())
	span.SetAttributes(telemetry.RunIDKey.String(id))
	runTrace := h.kit.RunTrace()
	if runTrace == nil {
		return
	}
	sc, err := runTrace(r.Context(), caller, id)
	if err != nil {
		return
	}
	telemetry.LinkRunStart(span, sc)
}

// externalBase is the absolute base URL (scheme://host[:port][/prefix])
// responses use: the configured PublicURL, else the address the connection
// arrived on. Nothing the client sends (Host, X-Forwarded-*) goes into it.
func (h *handler) externalBase(r *http.Request) string {
	if base := h.kit.PublicURL(); base != "" {
		return base
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := "localhost"
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && addr != nil {
		host = addr.String()
	}
	return scheme + "://" + host
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
