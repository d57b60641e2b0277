package mcpmount

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
)

// stubCatalog is a catalog.Source over a Static one whose lookups of some
// tools fail the way a Live source's do, or whose every read fails.
type stubCatalog struct {
	catalog.Source
	unavailable map[string]*catalog.UnavailableError
	err         error
}

func (c stubCatalog) Tools(ctx context.Context) ([]*catalog.Tool, error) {
	if c.err != nil {
		return nil, c.err
	}
	return c.Source.Tools(ctx)
}

func (c stubCatalog) Lookup(ctx context.Context, name string) (*catalog.Tool, error) {
	if c.err != nil {
		return nil, c.err
	}
	if u, ok := c.unavailable[name]; ok {
		return nil, u
	}
	return c.Source.Lookup(ctx, name)
}

func (c stubCatalog) ForCall(ctx context.Context, name string) (*catalog.Tool, error) {
	return c.Lookup(ctx, name)
}

func TestNewRequiresCatalog(t *testing.T) {
	if _, err := New(Options{Runs: runstest.New()}); err == nil || !strings.Contains(err.Error(), "Catalog") {
		t.Fatalf("New without a catalog: %v", err)
	}
}

// TestUnavailableTool: a tool the catalog knows but cannot run now is
// refused with the catalog's reason when the caller may see it, and exactly
// like an unknown tool when it may not. No run starts.
func TestUnavailableTool(t *testing.T) {
	s := newTestServer(t, func(o *Options) {
		o.Authenticate = keysFor(t, "ka=acme:alice,kb=globex:bob").Authenticate
		o.Catalog = stubCatalog{Source: o.Catalog, unavailable: map[string]*catalog.UnavailableError{
			"offline":      {Tool: "offline", Reason: `no live worker serves task queue "q"`, TaskQueues: []string{"q"}},
			"acme_offline": {Tool: "acme_offline", Reason: `no live worker serves task queue "q"`, TaskQueues: []string{"q"}, Tenants: []string{"acme"}},
		}}
	})
	c := s.client(t, tasksCaps())
	c.key = "ka"
	for _, name := range []string{"offline", "acme_offline"} {
		r := c.call("tools/call", map[string]any{"name": name, "arguments": map[string]any{}}, nil)
		wantError(t, r, http.StatusBadRequest, -32602)
		if want := `tool "` + name + `" is unavailable: no live worker serves task queue "q"`; r.Error.Message != want {
			t.Errorf("%s: message %q, want %q", name, r.Error.Message, want)
		}
		if want := `{"unavailable":{"taskQueues":["q"],"tool":"` + name + `"}}`; string(r.Error.Data) != want {
			t.Errorf("%s: data %s, want %s", name, r.Error.Data, want)
		}
	}
	// Tenant globex may not see acme_offline: the answer is an unknown tool's.
	c.key = "kb"
	hidden := c.call("tools/call", map[string]any{"name": "acme_offline", "arguments": map[string]any{}}, nil)
	unknown := c.call("tools/call", map[string]any{"name": "nope", "arguments": map[string]any{}}, nil)
	wantError(t, hidden, http.StatusBadRequest, -32602)
	wantError(t, unknown, http.StatusBadRequest, -32602)
	if hidden.Error.Message != `unknown tool "acme_offline"` || unknown.Error.Message != `unknown tool "nope"` {
		t.Errorf("hidden %q, unknown %q", hidden.Error.Message, unknown.Error.Message)
	}
	if n := s.runs.StartCount(); n != 0 {
		t.Fatalf("%d runs started", n)
	}
}

// TestCatalogReadError: a catalog that cannot be read answers an internal
// error without its detail, and starts nothing.
func TestCatalogReadError(t *testing.T) {
	s := newTestServer(t, func(o *Options) {
		o.Catalog = stubCatalog{Source: o.Catalog, err: errors.New("visibility exploded: secret detail")}
	})
	c := s.client(t, tasksCaps())
	for _, r := range []rpc{
		c.call("tools/list", nil, nil),
		c.call("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 1}}, nil),
	} {
		if r.Error == nil || r.Error.Code != -32603 || strings.Contains(string(r.Raw), "secret") {
			t.Errorf("got HTTP %d %s", r.Status, r.Raw)
		}
	}
	if n := s.runs.StartCount(); n != 0 {
		t.Fatalf("%d runs started", n)
	}
}

// TestStartCarriesSpec: the run service gets the catalog's spec of the
// tool, from which it takes the task queue, workflow type and contract.
func TestStartCarriesSpec(t *testing.T) {
	spec := testCatalog()[0] // slow
	spec.TaskQueue, spec.WorkflowType = "slow-queue", "SlowWorkflow"
	s := newTestServer(t, func(o *Options) { o.Catalog = staticCatalog(t, spec) })
	wantResult(t, s.client(t, tasksCaps()).call("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 1}}, nil))
	got := s.runs.LastStart().Tool
	if got.Name != "slow" || got.TaskQueue != "slow-queue" || got.WorkflowType != "SlowWorkflow" || string(got.InputSchema) != string(spec.InputSchema) {
		t.Fatalf("start tool = %+v", got)
	}
}
