package auth

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// maxJWKSBytes bounds a JWKS document.
const maxJWKSBytes = 1 << 20

// keyCache is the transport of an issuer's JWKS fetches. go-oidc's
// RemoteKeySet fetches the key set again whenever a token names a key it
// does not hold (or its signature fails): keyCache answers a fetch made
// less than every after the last one with that one's document, so a
// stream of tokens with unknown keys costs the issuer at most one fetch
// per interval, and a key the issuer adds is seen within one.
type keyCache struct {
	client *http.Client
	every  time.Duration

	mu      sync.Mutex
	fetched time.Time
	status  int
	header  http.Header
	body    []byte
}

// newKeyCache returns the transport; every <= 0 fetches every time.
func newKeyCache(client *http.Client, every time.Duration) *keyCache {
	return &keyCache{client: client, every: every}
}

// RoundTrip fetches req (a GET of the JWKS) or answers the last fetch.
func (c *keyCache) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.every > 0 && !c.fetched.IsZero() && time.Since(c.fetched) < c.every {
		return c.response(req), nil
	}
	resp, err := c.client.Do(req)
	if err != nil {
		// A failure counts as a fetch too: an issuer that is down is not
		// asked again at every token.
		c.fetched, c.status, c.header, c.body = time.Now(), http.StatusBadGateway, http.Header{}, []byte(err.Error())
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the key set: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("the key set is larger than %d bytes", maxJWKSBytes)
	}
	c.fetched, c.status, c.header, c.body = time.Now(), resp.StatusCode, resp.Header.Clone(), body
	return c.response(req), nil
}

// response is the last fetch's response to req.
func (c *keyCache) response(req *http.Request) *http.Response {
	return &http.Response{
		StatusCode: c.status, Status: http.StatusText(c.status), Header: c.header.Clone(),
		Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)),
		Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
}
