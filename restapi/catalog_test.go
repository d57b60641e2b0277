package restapi

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/catalog"
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

// TestCreateRunUnavailable: a workflow the catalog knows but cannot run now
// is 503 workflow_unavailable with the catalog's reason for a caller that
// may see it, and 404 workflow_not_found, as an unknown one, for others.
func TestCreateRunUnavailable(t *testing.T) {
	s := newTestServer(t, func(o *Options) {
		o.Catalog = stubCatalog{Source: o.Catalog, unavailable: map[string]*catalog.UnavailableError{
			"offline":      {Tool: "offline", Reason: `no live worker polls task queue "q"`},
			"acme-offline": {Tool: "acme-offline", Reason: `no live worker polls task queue "q"`, Tenants: []string{"acme"}},
		}}
	})
	for _, tt := range []struct {
		token, workflow string
		status          int
		code            string
	}{
		{"key-acme", "offline", http.StatusServiceUnavailable, "workflow_unavailable"},
		{"key-globex", "offline", http.StatusServiceUnavailable, "workflow_unavailable"},
		{"key-acme", "acme-offline", http.StatusServiceUnavailable, "workflow_unavailable"},
		{"key-globex", "acme-offline", http.StatusNotFound, "workflow_not_found"},
	} {
		t.Run(tt.token+"/"+tt.workflow, func(t *testing.T) {
			r := call(t, http.MethodPost, s.URL+"/runs", tt.token, `{"workflowId":"`+tt.workflow+`"}`)
			wantError(t, r, tt.status, tt.code)
			msg := r.body["error"].(map[string]any)["message"].(string)
			if tt.status == http.StatusServiceUnavailable && !strings.Contains(msg, `no live worker polls task queue "q"`) {
				t.Errorf("message %q does not say why", msg)
			}
			if tt.status == http.StatusNotFound {
				// The same answer as for a workflow nobody publishes.
				other := call(t, http.MethodPost, s.URL+"/runs", tt.token, `{"workflowId":"nope"}`)
				if want := strings.ReplaceAll(string(other.raw), "nope", tt.workflow); string(r.raw) != want {
					t.Errorf("answer %s, unknown workflow's %s", r.raw, other.raw)
				}
			}
		})
	}
	if n := len(s.runs.Starts()); n != 0 {
		t.Fatalf("%d runs started", n)
	}
}

// TestCatalogReadError: a catalog that cannot be read makes POST /runs 500
// internal_error without its detail, and the discovery document lists no
// fixtures.
func TestCatalogReadError(t *testing.T) {
	s := newTestServer(t, func(o *Options) {
		o.Catalog = stubCatalog{Source: o.Catalog, err: errors.New("visibility exploded: secret detail")}
	})
	r := call(t, http.MethodPost, s.URL+"/runs", "key-acme", `{"workflowId":"conformance-delay","inputs":{"delayMs":1}}`)
	wantError(t, r, http.StatusInternalServerError, "internal_error")
	if strings.Contains(string(r.raw), "secret") {
		t.Fatalf("internal detail leaked: %s", r.raw)
	}
	if n := len(s.runs.Starts()); n != 0 {
		t.Fatalf("%d runs started", n)
	}
	for _, hdr := range [][]string{nil, {VersionHeader, "2.0"}} {
		d := call(t, http.MethodGet, s.URL+"/.well-known/openwop", "", "", hdr...)
		if d.status != http.StatusOK || !reflect.DeepEqual(d.body["fixtures"], []any{}) {
			t.Fatalf("%v: %d %s", hdr, d.status, d.raw)
		}
	}
}

// TestCreateRunCarriesSpec: the run service gets the catalog's spec of the
// workflow, from which it takes the task queue, workflow type and contract.
func TestCreateRunCarriesSpec(t *testing.T) {
	spec := testTools[0] // conformance-delay
	spec.TaskQueue, spec.WorkflowType = "delay-queue", "DelayWorkflow"
	s := newTestServer(t, func(o *Options) { o.Catalog = staticCatalog(t, spec) })
	r := call(t, http.MethodPost, s.URL+"/runs", "key-acme", `{"workflowId":"conformance-delay","inputs":{"delayMs":1}}`)
	if r.status != http.StatusCreated || len(s.runs.Starts()) != 1 {
		t.Fatalf("got %d %s", r.status, r.raw)
	}
	got := s.runs.Starts()[0].Tool
	if got.Name != "conformance-delay" || got.TaskQueue != "delay-queue" || got.WorkflowType != "DelayWorkflow" {
		t.Fatalf("start tool = %+v", got)
	}
}
