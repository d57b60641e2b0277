package session

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
)

// HeaderSessionID is the session header of the streamable HTTP transport
// of the session dialect (2025-06-18, 2025-11-25).
const HeaderSessionID = "Mcp-Session-Id"

// sessions records the live HTTP sessions of the stateful SDK handler and
// the caller each belongs to. A session is bound to the caller that
// initialized it: any other credential naming it is told the session does
// not exist.
type sessions struct {
	mu    sync.Mutex
	owner map[string]string             // session id -> principal
	live  map[string]*mcp.ServerSession // session id -> session
	// calls holds the claims of the requests each session has in flight.
	calls map[string]map[*ownership.Claim]struct{}
	// tasks holds the sessions (HTTP or stdio) whose initialize declared
	// the 2025-11-25 capabilities.tasks: they follow runs as tasks.
	tasks map[*mcp.ServerSession]bool
}

// declareTasks records that ss declared capabilities.tasks, until it ends.
func (s *sessions) declareTasks(ss *mcp.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tasks == nil {
		s.tasks = map[*mcp.ServerSession]bool{}
	}
	s.tasks[ss] = true
}

// forgetTasks drops what declareTasks recorded of ss.
func (s *sessions) forgetTasks(ss *mcp.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tasks, ss)
}

// declaredTasks reports whether ss declared capabilities.tasks.
func (s *sessions) declaredTasks(ss *mcp.ServerSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ss != nil && s.tasks[ss]
}

// enter records that claim's request of session id is in flight, until
// the returned func is called.
func (s *sessions) enter(id string, claim *ownership.Claim) (leave func()) {
	if claim == nil {
		return func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string]map[*ownership.Claim]struct{}{}
	}
	if s.calls[id] == nil {
		s.calls[id] = map[*ownership.Claim]struct{}{}
	}
	s.calls[id][claim] = struct{}{}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.calls[id], claim)
		if len(s.calls[id]) == 0 {
			delete(s.calls, id)
		}
	}
}

// inFlight returns the claims of session id's requests in flight.
func (s *sessions) inFlight(id string) []*ownership.Claim {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*ownership.Claim, 0, len(s.calls[id]))
	for c := range s.calls[id] {
		out = append(out, c)
	}
	return out
}

func (s *sessions) add(ss *mcp.ServerSession, owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owner == nil {
		s.owner = map[string]string{}
		s.live = map[string]*mcp.ServerSession{}
	}
	s.owner[ss.ID()] = owner
	s.live[ss.ID()] = ss
}

func (s *sessions) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.owner, id)
	delete(s.live, id)
}

// all returns the live sessions.
func (s *sessions) all() []*mcp.ServerSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*mcp.ServerSession, 0, len(s.live))
	for _, ss := range s.live {
		out = append(out, ss)
	}
	return out
}

// ownedBy reports whether session id is live and belongs to owner.
func (s *sessions) ownedBy(id, owner string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.owner[id]
	return ok && o == owner
}

func (s *sessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.owner)
}

// trackSession records the session an initialize request created, bound
// to its caller, until the session ends (DELETE, idle expiry). Sessions
// without an id (stdio, the stateless handler) are not recorded.
func (d *Dialect) trackSession(ctx context.Context, req mcp.Request) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil || ss.ID() == "" {
		return
	}
	caller, err := d.Core.Caller(ctx)
	if err != nil {
		return
	}
	id := ss.ID()
	d.sessions.add(ss, core.Principal(caller))
	go func() {
		_ = ss.Wait()
		d.sessions.remove(id)
		d.Log.Debug("MCP session ended", zap.String("session", id))
	}()
}

// noteDeclaredTasks records, for the session of an initialize request
// marked as declaring the 2025-11-25 capabilities.tasks (the SDK's
// capabilities type drops it), that its client follows runs as tasks;
// the record ends with the session.
func (d *Dialect) noteDeclaredTasks(req mcp.Request, side *requestSide) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil || side == nil || !side.taskField {
		return
	}
	d.sessions.declareTasks(ss)
	go func() {
		_ = ss.Wait()
		d.sessions.forgetTasks(ss)
	}()
}

// SessionOf returns the Mcp-Session-Id of a session-dialect request, or ""
// (no header, or a 2026-07-28 request, which is stateless whatever it
// carries).
func (d *Dialect) SessionOf(r *http.Request) string {
	if wire.ModernHeader(r) {
		return ""
	}
	return r.Header.Get(HeaderSessionID)
}

// CheckSession answers 404 unless session id is live and belongs to the
// caller's principal; a foreign session reads exactly like an unknown one.
func (d *Dialect) CheckSession(w http.ResponseWriter, id, owner string, reqID json.RawMessage) bool {
	if d.sessions.ownedBy(id, owner) {
		return true
	}
	wire.WriteRefusal(w, wire.Refusal{Status: http.StatusNotFound, ID: reqID, Code: wire.CodeInvalidRequest,
		Message: "session not found: it ended or never existed; send initialize to start a new one"})
	return false
}

// ServeStream serves GET (the session's standalone SSE stream) and
// DELETE (end the session) for a session-dialect client.
func (d *Dialect) ServeStream(w http.ResponseWriter, r *http.Request, id string) {
	caller, err := d.authenticate(r)
	if err != nil {
		wire.WriteUnauthorized(w, err)
		return
	}
	if !d.CheckSession(w, id, core.Principal(caller), nil) {
		return
	}
	if r.Method == http.MethodDelete {
		// The SDK closes a session only once its handlers returned, and
		// they would not be told: the calls in flight end here, unanswered,
		// and their runs are cancelled.
		for _, c := range d.sessions.inFlight(id) {
			c.Settle(false)
		}
	}
	pw := &plainErrorWriter{ResponseWriter: w}
	defer pw.finish()
	d.sessionHandler.ServeHTTP(pw, r.WithContext(auth.WithSubject(r.Context(), caller)))
}

// sessionStarted reports whether a new session may start, answering 503
// when MaxSessions are open.
func (d *Dialect) sessionStarted(w http.ResponseWriter, reqID json.RawMessage) bool {
	if d.sessions.count() < d.maxSessions {
		return true
	}
	d.Log.Warn("MCP session limit reached; initialize refused", zap.Int("maxSessions", d.maxSessions))
	w.Header().Set("Retry-After", "60")
	wire.WriteRefusal(w, wire.Refusal{Status: http.StatusServiceUnavailable, ID: reqID, Code: wire.CodeInternalError,
		Message: "too many open MCP sessions; retry later, or end unused sessions with DELETE"})
	return false
}

// Shutdown closes every HTTP session (a session closes once its calls in
// flight have returned; its GET stream then ends). Clients may start new
// sessions afterwards. It returns when every session is closed, or with
// ctx's error when ctx ends first.
func (d *Dialect) Shutdown(ctx context.Context) error {
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		var wg sync.WaitGroup
		for _, ss := range d.sessions.all() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = ss.Close()
			}()
		}
		wg.Wait()
	}()
	select {
	case <-closed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcpmount: shut down: %w", ctx.Err())
	}
}

// ServeResponse hands a session-dialect client's response to a request of the
// server (an elicitation) to the session's SDK handler, which matches it
// to the waiting request, once the session is checked.
func (d *Dialect) ServeResponse(w http.ResponseWriter, r *http.Request, in *wire.Incoming) {
	if d.CheckSession(w, in.Session, core.Principal(in.Caller), nil) {
		d.serveSDK(w, r, in, d.sessionRoute(in.Session))
	}
}
