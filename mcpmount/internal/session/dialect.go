package session

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
)

// Options configure the dialect. Parts.Core, Parts.Log and Authenticate
// are required.
type Options struct {
	wire.Parts
	// Authenticate resolves the caller of a session's GET or DELETE.
	Authenticate auth.Authenticator
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// SessionIdleTimeout ends an HTTP session with no request in flight
	// for this long; MaxSessions bounds the sessions open at once.
	SessionIdleTimeout time.Duration
	MaxSessions        int
}

// Dialect serves session-dialect requests, through the go-sdk.
type Dialect struct {
	wire.Parts
	tracker *ownership.Tracker
	// tasks serves the tasks/* methods.
	tasks        *taskMethods
	authenticate auth.Authenticator
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
	// requests are the records of the requests in flight, which the
	// go-sdk's handlers find by their claimHeader.
	requests requests
}

// New builds the dialect and its go-sdk server.
func New(o Options) (*Dialect, error) {
	m := &Dialect{
		Parts: o.Parts, tracker: o.Core.Tracker(), authenticate: o.Authenticate,
		maxBody: o.MaxBodyBytes, maxSessions: o.MaxSessions,
	}
	m.tasks = &taskMethods{Parts: o.Parts, tasks: o.Core.Tasks(), tracker: m.tracker, requests: &m.requests}
	if err := m.newServer(o); err != nil {
		return nil, err
	}
	return m, nil
}
