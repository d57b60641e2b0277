package mcpmount

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
)

// stack is the whole product on the embedded Temporal server: a worker with
// the example tools and the conformance fixtures, runs.Service, and the
// mount served over HTTP.
type stack struct {
	*httptest.Server
	runs  *runs.Service
	env   *testenv.Env
	acts  *tools.Activities
	mount *Mount
}

// newStack starts a stack. keys authenticate callers (nil: development,
// every caller anonymous); addr is the listen address ("" for any free
// loopback port).
func newStack(t testing.TB, keys *auth.Keys, addr string) *stack {
	t.Helper()
	return newStackWith(t, keys, addr, nil)
}

// newStackWith is newStack with a hook that adjusts the mount's Options
// (which already hold the run service, the catalog and the keys) and may
// set unexported test hooks on the Mount once it is built.
func newStackWith(t testing.TB, keys *auth.Keys, addr string, configure func(*Options) func(*Mount)) *stack {
	t.Helper()
	return newStackFaulty(t, keys, addr, nil, nil, configure)
}

// newStackFaulty is newStackWith with faults injected into the run
// service's Temporal calls (nil: none) and the mount wrapped by wrap (nil:
// not wrapped).
func newStackFaulty(t testing.TB, keys *auth.Keys, addr string, faults *testenv.Faults, wrap func(http.Handler) http.Handler,
	configure func(*Options) func(*Mount)) *stack {
	t.Helper()
	env := testenv.Temporal(t)
	acts := tools.NewActivities(testenv.Logger(), tools.ActivityOptions{HeartbeatInterval: 200 * time.Millisecond, SectionDelay: 10 * time.Millisecond})
	reg, err := conformancetools.Registry(acts)
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	env.NewWorker(t, tq, reg.Register)
	c := env.Client
	if faults != nil {
		c = env.DialFaulty(t, faults)
	}
	svc := runs.New(c, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
	// The specs name no task queue: runs start on the service's TaskQueue,
	// which the worker polls.
	opts := Options{Runs: svc, Catalog: staticCatalog(t, reg.Specs()...), Logger: env.Logger, PollInterval: 200 * time.Millisecond}
	if keys != nil {
		opts.Authenticate = keys.Authenticate
	}
	var after func(*Mount)
	if configure != nil {
		after = configure(&opts)
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if after != nil {
		after(m)
	}
	mux := http.NewServeMux()
	var h http.Handler = m
	if wrap != nil {
		h = wrap(h)
	}
	mux.Handle("/mcp", h)
	srv := httptest.NewUnstartedServer(mux)
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener.Close()
		srv.Listener = l
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return &stack{Server: srv, runs: svc, env: env, acts: acts, mount: m}
}

// client returns a 2026-07-28 test client of the stack's /mcp endpoint.
func (s *stack) client(t *testing.T, key string, caps map[string]any) *client {
	return &client{t: t, url: s.URL + "/mcp", key: key, caps: caps}
}
