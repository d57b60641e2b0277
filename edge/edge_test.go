package edge_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/edge"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
	"github.com/openwop/temporal-mcp/signals"
)

// TestNewRefuses: New refuses what neither edge can serve with.
func TestNewRefuses(t *testing.T) {
	cat, err := catalog.NewStatic(signals.ToolSpec{Name: "t", Description: "A tool.", InputSchema: []byte(`{"type":"object"}`), TaskSupport: signals.TaskOptional})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts edge.Options
		want string
	}{
		{"no runs", edge.Options{Catalog: cat}, "Options.Runs is required"},
		{"no catalog", edge.Options{Runs: runstest.New()}, "Options.Catalog is required"},
		{"too many rounds", edge.Options{Runs: runstest.New(), Catalog: cat, MRTRMaxRounds: edge.MaxMRTRMaxRounds + 1}, "outside 1..16"},
		{"negative rounds", edge.Options{Runs: runstest.New(), Catalog: cat, MRTRMaxRounds: -1}, "outside 1..16"},
		{"relative public URL", edge.Options{Runs: runstest.New(), Catalog: cat, PublicURL: "wop.example.com"}, "public URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kit, err := edge.New(tt.opts)
			if err == nil || kit != nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, %v; want an error with %q", kit, err, tt.want)
			}
		})
	}
}

// TestNewDefaults: the MRTR round cap defaults to DefaultMRTRMaxRounds,
// the public URL loses its trailing slash, and nothing is traced without
// a tracer provider.
func TestNewDefaults(t *testing.T) {
	cat, err := catalog.NewStatic(signals.ToolSpec{Name: "t", Description: "A tool.", InputSchema: []byte(`{"type":"object"}`), TaskSupport: signals.TaskOptional})
	if err != nil {
		t.Fatal(err)
	}
	kit, err := edge.New(edge.Options{Runs: runstest.New(), Catalog: cat, PublicURL: "https://wop.example.com/"})
	if err != nil {
		t.Fatal(err)
	}
	if got := kit.MRTRMaxRounds(); got != edge.DefaultMRTRMaxRounds {
		t.Errorf("MRTRMaxRounds = %d, want %d", got, edge.DefaultMRTRMaxRounds)
	}
	if got := kit.PublicURL(); got != "https://wop.example.com" {
		t.Errorf("PublicURL = %q", got)
	}
	if kit.Tracer("mcpmount") != nil {
		t.Error("Tracer without a TracerProvider is not nil")
	}
	if kit.Runs() == nil || kit.Catalog() != cat {
		t.Error("the run service or the catalog is missing")
	}
}

// TestKitGate: the Kit's request gate lets the public URL's host through
// and refuses another Host or a foreign Origin, and a body that is not
// JSON, with errors that name the refused header.
func TestKitGate(t *testing.T) {
	cat, err := catalog.NewStatic(signals.ToolSpec{Name: "t", Description: "A tool.", InputSchema: []byte(`{"type":"object"}`), TaskSupport: signals.TaskOptional})
	if err != nil {
		t.Fatal(err)
	}
	kit, err := edge.New(edge.Options{Runs: runstest.New(), Catalog: cat, PublicURL: "https://wop.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	req := func(host, origin, contentType string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "https://"+host+"/runs", strings.NewReader("{}"))
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		r.Header.Set("Content-Type", contentType)
		return r
	}
	tests := []struct {
		name    string
		r       *http.Request
		check   func(*http.Request) error
		problem string // in the error; "" for none
	}{
		{"the public host", req("wop.example.com", "", "application/json"), kit.CheckHostOrigin, ""},
		{"its own origin", req("wop.example.com", "https://wop.example.com", "application/json"), kit.CheckRequest, ""},
		{"another host", req("evil.example", "", "application/json"), kit.CheckHostOrigin, "evil.example"},
		{"a foreign origin", req("wop.example.com", "https://evil.example", "application/json"), kit.CheckRequest, "evil.example"},
		{"not JSON", req("wop.example.com", "", "text/plain"), kit.CheckRequest, "text/plain"},
		{"not JSON, host and origin only", req("wop.example.com", "", "text/plain"), kit.CheckHostOrigin, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.r)
			if (err == nil) != (tt.problem == "") || err != nil && !strings.Contains(err.Error(), tt.problem) {
				t.Fatalf("check = %v, want an error naming %q (none when empty)", err, tt.problem)
			}
		})
	}
}
