package app

import (
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app/config"
)

// HeaderTimeout bounds the arrival of a request's headers (from the
// connection's first byte, or the end of the previous request); a shorter
// read timeout bounds them too.
const HeaderTimeout = 10 * time.Second

// Limits are the connection limits of the HTTP listener. Zero fields take
// the config defaults.
type Limits struct {
	// ReadTimeout bounds the arrival of a whole request, headers and body.
	// Only the reading of the request is bounded: a long response (a
	// blocking call, an SSE stream, a long poll) is not, as net/http clears
	// the read deadline once the body is read.
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that carries no request
	// for that long.
	IdleTimeout time.Duration
	// MaxConns bounds the open connections; past it new connections wait
	// in the listen backlog until one closes.
	MaxConns int
}

// limitsOf returns cfg's limits with the defaults filled in.
func limitsOf(cfg config.Config) Limits {
	l := Limits{ReadTimeout: cfg.HTTPReadTimeout, IdleTimeout: cfg.HTTPIdleTimeout, MaxConns: cfg.HTTPMaxConns}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = config.DefaultHTTPReadTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = config.DefaultHTTPIdleTimeout
	}
	if l.MaxConns <= 0 {
		l.MaxConns = config.DefaultHTTPMaxConns
	}
	return l
}

// newHTTPServer is the listener's server: read, header and idle timeouts,
// and no write timeout (it would cut long responses).
func newHTTPServer(h http.Handler, l Limits, logger *zap.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(HeaderTimeout, l.ReadTimeout),
		ReadTimeout:       l.ReadTimeout,
		IdleTimeout:       l.IdleTimeout,
		ErrorLog:          zap.NewStdLog(logger.Named("http")),
	}
}

// limitListener accepts at most a given number of connections at a time:
// Accept waits until an accepted connection is closed.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// newLimitListener limits l to n open connections.
func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close closes the listener and ends a waiting Accept.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn frees its listener slot when closed (once).
type limitConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the connection when it can (the server's graceful
// close of a connection it refuses).
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
