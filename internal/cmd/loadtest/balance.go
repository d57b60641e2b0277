package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// httpBalancer is the harness's load balancer in front of the server
// replicas: round-robin per request, sticky by Mcp-Session-Id only for
// session-era clients (2026-07-28 requests carry no session and go to any
// replica). A replica that refuses the connection (killed, restarting) is
// skipped for the next; a request in flight on a replica that dies is
// aborted, so the client sees a transport error as it would without a
// balancer.
type httpBalancer struct {
	backends  []string // base URLs
	transport *http.Transport
	next      atomic.Uint64
	sessions  sync.Map // Mcp-Session-Id -> backend index
	l         net.Listener
	srv       *http.Server
}

func newHTTPBalancer(backends []string) (*httpBalancer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 512
	b := &httpBalancer{backends: backends, transport: t, l: l}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "replica" },
		Transport:     b,
		FlushInterval: -1,
		ErrorHandler:  func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) },
	}
	b.srv = &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = b.srv.Serve(l) }()
	return b, nil
}

func (b *httpBalancer) url() string { return "http://" + b.l.Addr().String() }

// Close stops the balancer.
func (b *httpBalancer) Close() error { return b.srv.Close() }

// RoundTrip sends req to the session's replica or the next one, and on to
// the others while the connection is refused.
func (b *httpBalancer) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	first := int(b.next.Add(1) % uint64(len(b.backends)))
	sid := req.Header.Get("Mcp-Session-Id")
	if i, ok := b.sessions.Load(sid); ok && sid != "" {
		first = i.(int)
	}
	var err error
	for k := range b.backends {
		i := (first + k) % len(b.backends)
		out := req.Clone(req.Context())
		out.URL.Host = b.backends[i][len("http://"):]
		out.Host = out.URL.Host
		out.Body = io.NopCloser(bytes.NewReader(body))
		var resp *http.Response
		resp, err = b.transport.RoundTrip(out)
		if err == nil {
			if s := resp.Header.Get("Mcp-Session-Id"); s != "" && sid == "" {
				b.sessions.Store(s, i)
			}
			return resp, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("every replica refused the connection: %w", err)
}

// tcpBalancer is the harness's TCP balancer in front of the Temporal
// nodes' frontends, as a cluster's clients reach it through one address:
// each connection goes to the next node, or on to the others while a node
// refuses it.
type tcpBalancer struct {
	backends []string
	next     atomic.Uint64
	l        net.Listener
}

func newTCPBalancer(backends []string) (*tcpBalancer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &tcpBalancer{backends: backends, l: l}
	go b.serve()
	return b, nil
}

func (b *tcpBalancer) addr() string { return b.l.Addr().String() }

// Close stops accepting; connections in flight end with their peers.
func (b *tcpBalancer) Close() error { return b.l.Close() }

func (b *tcpBalancer) serve() {
	for {
		c, err := b.l.Accept()
		if err != nil {
			return
		}
		go b.pipe(c)
	}
}

// pipe connects c to a node and copies both ways until either side ends.
func (b *tcpBalancer) pipe(c net.Conn) {
	defer c.Close()
	first := int(b.next.Add(1) % uint64(len(b.backends)))
	for k := range b.backends {
		up, err := net.DialTimeout("tcp", b.backends[(first+k)%len(b.backends)], 2*time.Second)
		if err != nil {
			continue
		}
		defer up.Close()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
		<-done
		return
	}
}
