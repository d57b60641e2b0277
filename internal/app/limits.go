package app

import (
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/config"
)

// HeaderTimeout bounds the arrival of a request's headers (from the
// connection's first byte, or the end of the previous request).
const HeaderTimeout = 10 * time.Second

// Limits are the connection limits of the HTTP listener. Zero fields take
// the config defaults.
type Limits struct {
	// BodyTimeout bounds the arrival of a request body, counted from the
	// end of its headers. Only the reading of the request is bounded: a
	// long response (a blocking call, an SSE stream, a long poll) is not.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that carries no request
	// for that long.
	IdleTimeout time.Duration
	// MaxConns bounds the open connections; past it new connections wait
	// in the listen backlog until one closes.
	MaxConns int
}

// limitsOf returns cfg's limits with the defaults filled in.
func limitsOf(cfg config.Config) Limits {
	l := Limits{BodyTimeout: cfg.HTTPBodyTimeout, IdleTimeout: cfg.HTTPIdleTimeout, MaxConns: cfg.HTTPMaxConns}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = config.DefaultHTTPBodyTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = config.DefaultHTTPIdleTimeout
	}
	if l.MaxConns <= 0 {
		l.MaxConns = config.DefaultHTTPMaxConns
	}
	return l
}

// newHTTPServer is the listener's server: header and idle timeouts, the
// body deadline on every request, and no write timeout (it would cut long
// responses).
func newHTTPServer(h http.Handler, l Limits, logger *zap.Logger) *http.Server {
	return &http.Server{
		Handler: h,
		ReadHeaderTimeout: HeaderTimeout,
		ReadTimeout:       l.BodyTimeout,
		IdleTimeout:       l.IdleTimeout,
		ErrorLog:          zap.NewStdLog(logger.Named("http")),
	}
}

// bodyDeadline sets a read deadline of d on the connection while a
// request's body is read, and clears it once the body is read to its end,
// so that a client that sends its body slowly (or not at all) is cut off,
// while the response, however long, and the server's watch for the client
// going away afterwards are not. (http.Server.ReadTimeout would leave the
// deadline on the connection, and its expiry would cancel the request of a
// long response.) A handler that does not read the body to its end leaves
// the deadline in place: the server then drains the rest under it.
func bodyDeadline(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the connection's read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) })
	}
	return n, err
}

// limitListener accepts at most max connections at a time: Accept waits
// until an accepted connection is closed.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, max int) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, max), done: make(chan struct{})}
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
