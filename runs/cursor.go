package runs

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sync"
)

// A List cursor is sealed: base64url(tag || token), where token is
// Temporal's visibility page token and tag the first cursorTagLen bytes of
// HMAC-SHA256(key, tenant, filters, token). Only a cursor this service
// issued for the same tenant and filters opens, so a malformed or forged
// one is refused with ErrBadCursor before Temporal is asked (Temporal
// answers a bad page token slowly, after retries, and logs errors).
const (
	cursorTagLen = 16
	// maxCursorLen bounds a cursor's text; Temporal's page tokens are far
	// shorter.
	maxCursorLen = 8 << 10
)

// processCursorKey is the cursor key of services given no
// Options.CursorKey: random, once per process.
var processCursorKey = sync.OnceValue(func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(fmt.Sprintf("runs: cursor key: %v", err))
	}
	return k
})

func (s *Service) cursorKey() []byte {
	if len(s.opts.CursorKey) > 0 {
		return s.opts.CursorKey
	}
	return processCursorKey()
}

// cursorTag authenticates token for the tenant and the filters of req.
func (s *Service) cursorTag(tenant string, req ListRequest, token []byte) []byte {
	mac := hmac.New(sha256.New, s.cursorKey())
	for _, part := range []string{"openwop list cursor v1", tenant, req.Tool, string(req.Status)} {
		fmt.Fprintf(mac, "%d:%s", len(part), part)
	}
	mac.Write(token)
	return mac.Sum(nil)[:cursorTagLen]
}

// sealCursor turns Temporal's page token into the cursor handed out.
func (s *Service) sealCursor(tenant string, req ListRequest, token []byte) string {
	return base64.RawURLEncoding.EncodeToString(append(s.cursorTag(tenant, req, token), token...))
}

// openCursor returns the page token of a cursor sealCursor issued for the
// same tenant and filters, or an error wrapping ErrBadCursor that says
// what is wrong with it.
func (s *Service) openCursor(tenant string, req ListRequest, cursor string) ([]byte, error) {
	if len(cursor) > maxCursorLen {
		return nil, fmt.Errorf("%w: the cursor is %d characters long, more than any this server issues", ErrBadCursor, len(cursor))
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, fmt.Errorf("%w: the cursor is not unpadded base64url: %v", ErrBadCursor, err)
	}
	if len(raw) <= cursorTagLen {
		return nil, fmt.Errorf("%w: the cursor is too short to be one this server issued", ErrBadCursor)
	}
	tag, token := raw[:cursorTagLen], raw[cursorTagLen:]
	if !hmac.Equal(tag, s.cursorTag(tenant, req, token)) {
		return nil, fmt.Errorf("%w: the cursor was not issued by this server for this tenant and these filters", ErrBadCursor)
	}
	return token, nil
}
