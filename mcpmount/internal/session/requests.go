package session

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
)

// The session dialect's seam to the go-sdk. Its handlers get a request only as
// the SDK decoded it, with the HTTP headers (an HTTP session's context is
// the one of its initialize, not the request's), so the transport adapters
// (serveSDK, ServeStdio's route) record what they know of a request,
// ownership claim included, under a fresh key that claimHeader carries to
// the handlers.

// claimHeader is the request header that carries a request's key from the
// transport adapters to the go-sdk's handlers. The adapters set it,
// replacing any value a client sent.
const claimHeader = "X-Openwop-Request-Claim"

// lateOwnerWindow is how long the record of a request whose response was
// not delivered stays findable: a handler still running may find it and
// own a run, which the settled claim then cancels.
const lateOwnerWindow = 30 * time.Second

// requests holds the records of the requests in flight, by key.
type requests struct {
	mu    sync.Mutex
	byKey map[string]*requestSide
}

// add records side, whose claim must be set, until the claim settles
// (lateOwnerWindow longer when not delivered), and returns its key.
func (s *requests) add(side *requestSide) string {
	b := make([]byte, 16)
	rand.Read(b) // crypto/rand.Read never fails
	key := base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	if s.byKey == nil {
		s.byKey = map[string]*requestSide{}
	}
	s.byKey[key] = side
	s.mu.Unlock()
	side.claim.AfterSettle(func(delivered bool) {
		if delivered {
			s.forget(key)
			return
		}
		time.AfterFunc(lateOwnerWindow, func() { s.forget(key) })
	})
	return key
}

func (s *requests) forget(key string) {
	s.mu.Lock()
	delete(s.byKey, key)
	s.mu.Unlock()
}

// of returns the record of a request the SDK hands a handler, or nil (a
// request that came in through no adapter, which owns nothing).
func (s *requests) of(req mcp.Request) *requestSide {
	extra := req.GetExtra()
	if extra == nil {
		return nil
	}
	key := extra.Header.Get(claimHeader)
	if key == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[key]
}

// requestClaim is the ownership claim of the request (nil for a nil
// record).
func (c *requestSide) requestClaim() *ownership.Claim {
	if c == nil {
		return nil
	}
	return c.claim
}
