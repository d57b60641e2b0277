package session

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/runs"
)

// Options configure the dialect. Core, Log and Authenticate are required.
type Options struct {
	Core      *core.Core
	Projector wire.Projector
	Observer  wire.Observer
	Lister    wire.Lister
	Log       *zap.Logger
	// Authenticate resolves the caller of a session's GET or DELETE.
	Authenticate auth.Authenticator
	// Capabilities, Implementation and Instructions are what initialize
	// answers; CacheTTLMs is the ttlMs of cacheable results.
	Capabilities   *mcp.ServerCapabilities
	Implementation *mcp.Implementation
	Instructions   string
	CacheTTLMs     int64
	// KeepAlive is the interval of SSE comments on a waiting response.
	KeepAlive time.Duration
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// SessionIdleTimeout ends an HTTP session with no request in flight
	// for this long; MaxSessions bounds the sessions open at once.
	SessionIdleTimeout time.Duration
	MaxSessions        int
}

// Dialect serves session-era requests, through the go-sdk.
type Dialect struct {
	core         *core.Core
	runs         runs.Backend
	tracker      *ownership.Tracker
	proj         wire.Projector
	obs          wire.Observer
	lister       wire.Lister
	log          *zap.Logger
	authenticate auth.Authenticator
	keepAlive    time.Duration
	cacheTTLMs   int64
	maxBody      int64
	// server is the go-sdk's server; jsonHandler and sseHandler serve its
	// requests that belong to no session, and sessionHandler (stateful)
	// those of HTTP sessions.
	server         *mcp.Server
	jsonHandler    http.Handler
	sseHandler     http.Handler
	sessionHandler http.Handler
	sessions       sessions
	maxSessions    int
}

// New builds the dialect and its go-sdk server.
func New(o Options) (*Dialect, error) {
	m := &Dialect{
		core: o.Core, runs: o.Core.Runs(), tracker: o.Core.Tracker(), proj: o.Projector, obs: o.Observer,
		lister: o.Lister, log: o.Log, authenticate: o.Authenticate, keepAlive: o.KeepAlive, cacheTTLMs: o.CacheTTLMs,
		maxBody: o.MaxBodyBytes, maxSessions: o.MaxSessions,
	}
	if err := m.newServer(o); err != nil {
		return nil, err
	}
	return m, nil
}
