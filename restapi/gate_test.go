package restapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// gateTool is the one tool of the gate tests' catalog.
var gateTool = signals.ToolSpec{Name: "delay", Description: "waits", TaskSupport: signals.TaskOptional,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"delayMs":{"type":"number"},"label":{"type":"string"}},"required":["delayMs"]}`)}

// gateServer serves the REST API keyless (development mode: every caller
// is the anonymous local tenant), as a local server does by default, over
// the fake run service holding one run waiting for approval at node
// "approve". It returns the server, the fake and that run's id.
func gateServer(t *testing.T, runsSvc runs.Backend, mutate func(*restapi.Options)) (*httptest.Server, *runstest.Fake, string) {
	t.Helper()
	cat, err := catalog.NewStatic(gateTool)
	if err != nil {
		t.Fatal(err)
	}
	f := runstest.New()
	id, err := runid.New(auth.Anonymous().Tenant, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	f.Add(signals.Snapshot{
		RunID: id, Tool: "delay", Status: signals.StatusWaitingApproval,
		Owner:     signals.Owner{Tenant: auth.Anonymous().Tenant, Subject: auth.Anonymous()},
		CreatedAt: now, UpdatedAt: now, LastSequence: -1,
		Interrupts: []signals.Interrupt{{ID: "i-approve", NodeID: "approve", Kind: signals.KindApproval,
			Title: "Approve?", Actions: []string{"accept", "reject"}, RequestedAt: now}},
	})
	if runsSvc == nil {
		runsSvc = f
	}
	opts := restapi.Options{Runs: runsSvc, Authenticate: auth.AnonymousAuthenticator, Catalog: cat}
	if mutate != nil {
		mutate(&opts)
	}
	api, err := restapi.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv, f, id
}

// gateResponse is an answer with its REST error decoded.
type gateResponse struct {
	status int
	header http.Header
	raw    []byte
	code   string
	msg    string
}

// gateDo sends method path with body; host overrides the Host header, hdr
// sets headers (a Content-Type of application/json is set for a body unless
// hdr names one).
func gateDo(t *testing.T, srv *httptest.Server, method, path, host, body string, hdr map[string]string) gateResponse {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if host != "" {
		req.Host = host
	}
	// Every response is validated against the OpenAPI document.
	client := &http.Client{Transport: restapi.CheckedTransport(t, srv.Client().Transport)}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := gateResponse{status: resp.StatusCode, header: resp.Header, raw: raw}
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil {
		out.code, out.msg = e.Error.Code, e.Error.Message
	}
	return out
}

// gateRoutes are every route of the REST API and the discovery document,
// with a body that passes validation on the POST routes.
func gateRoutes(id string) []struct{ name, method, path, body string } {
	p := "/runs/" + runid.Project(id)
	return []struct{ name, method, path, body string }{
		{"discovery", http.MethodGet, "/.well-known/openwop", ""},
		{"listRuns", http.MethodGet, "/runs", ""},
		{"createRun", http.MethodPost, "/runs", `{"workflowId":"delay","inputs":{"delayMs":1}}`},
		{"getRun", http.MethodGet, p, ""},
		{"cancelRun", http.MethodPost, p + "/cancel", `{"reason":"no"}`},
		{"pollRunEvents", http.MethodGet, p + "/events/poll?timeout=0", ""},
		{"resolveInterrupt", http.MethodPost, p + "/interrupts/approve", `{"resumeValue":{"action":"accept"}}`},
		{"unknown path", http.MethodGet, "/nope", ""},
	}
}

// TestGateRefusesCrossSiteOnEveryRoute: a keyless local server refuses a
// foreign Origin (403), a foreign Host (403, DNS rebinding) and a body that
// is not application/json (415) on every route, with the REST error shape,
// before any run operation.
func TestGateRefusesCrossSiteOnEveryRoute(t *testing.T) {
	srv, f, id := gateServer(t, nil, nil)
	type refusal struct {
		name   string
		host   string
		hdr    map[string]string
		posts  bool // POST routes only
		status int
		code   string
		names  string // what the message names
	}
	refusals := []refusal{
		{"foreign origin", "", map[string]string{"Origin": "http://evil.example"}, false, 403, "forbidden", "Origin"},
		{"null origin", "", map[string]string{"Origin": "null"}, false, 403, "forbidden", "Origin"},
		{"foreign origin on a loopback host", "localhost", map[string]string{"Origin": "https://evil.example:8080"}, false, 403, "forbidden", "Origin"},
		{"foreign host", "attacker.example", nil, false, 403, "forbidden", "Host"},
		{"foreign host with its own origin", "attacker.example:8080", map[string]string{"Origin": "http://attacker.example:8080"}, false, 403, "forbidden", "Host"},
		{"text/plain body", "", map[string]string{"Content-Type": "text/plain"}, true, 415, "unsupported_media_type", "Content-Type"},
		{"form body", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, true, 415, "unsupported_media_type", "Content-Type"},
		{"multipart body", "", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, true, 415, "unsupported_media_type", "Content-Type"},
	}
	for _, rt := range gateRoutes(id) {
		for _, rf := range refusals {
			if rf.posts && rt.method != http.MethodPost {
				continue
			}
			t.Run(rt.name+"/"+rf.name, func(t *testing.T) {
				r := gateDo(t, srv, rt.method, rt.path, rf.host, rt.body, rf.hdr)
				if r.status != rf.status || r.code != rf.code || !strings.Contains(r.msg, rf.names) {
					t.Fatalf("%s %s = %d %s, want %d %s naming %s", rt.method, rt.path, r.status, r.raw, rf.status, rf.code, rf.names)
				}
				if ct := r.header.Get("Content-Type"); ct != "application/json" {
					t.Fatalf("Content-Type = %q", ct)
				}
			})
		}
	}
	if f.StartCount() != 0 || len(f.CancelCalls()) != 0 || len(f.ResolveCalls()) != 0 || len(f.Lists()) != 0 || len(f.Waits()) != 0 {
		t.Fatalf("a refused request reached the run service: starts %d cancels %d resolves %d lists %d polls %d",
			f.StartCount(), len(f.CancelCalls()), len(f.ResolveCalls()), len(f.Lists()), len(f.Waits()))
	}

	// The same requests from the same site pass the gate.
	for _, rt := range gateRoutes(id) {
		for _, hdr := range []map[string]string{nil, {"Origin": "http://localhost:3000"}, {"Origin": srv.URL}} {
			r := gateDo(t, srv, rt.method, rt.path, "", rt.body, hdr)
			if r.status == 403 || r.status == 415 || r.status >= 500 {
				t.Errorf("%s %s with %v = %d %s, want it past the gate", rt.method, rt.path, hdr, r.status, r.raw)
			}
		}
	}
	// A POST without a body and without Content-Type passes too.
	if r := gateDo(t, srv, http.MethodPost, "/runs/"+runid.Project(id)+"/cancel", "", "", nil); r.status != http.StatusOK {
		t.Errorf("empty cancel = %d %s", r.status, r.raw)
	}
}

// TestGateConfiguredHostsAndOrigins: allowed hosts and origins, and the
// public URL's, pass; others still do not.
func TestGateConfiguredHostsAndOrigins(t *testing.T) {
	srv, _, _ := gateServer(t, nil, func(o *restapi.Options) {
		o.PublicURL = "https://wop.example.com/base"
		o.AllowedHosts = []string{"proxy.internal"}
		o.AllowedOrigins = []string{"https://app.example.com"}
	})
	tests := []struct {
		name   string
		host   string
		origin string
		want   int
	}{
		{"public URL host", "wop.example.com", "", 200},
		{"public URL host with its port", "wop.example.com:443", "", 200},
		{"public URL origin", "", "https://wop.example.com", 200},
		{"allowed host", "proxy.internal:8080", "", 200},
		{"allowed origin", "", "https://app.example.com", 200},
		{"allowed origin, trailing slash", "", "https://app.example.com/", 200},
		{"other host", "other.example", "", 403},
		{"other origin", "", "https://app.example.com.evil.example", 403},
		{"public URL origin with another scheme", "", "http://wop.example.com", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.origin != "" {
				hdr["Origin"] = tt.origin
			}
			if r := gateDo(t, srv, http.MethodGet, "/runs", tt.host, "", hdr); r.status != tt.want {
				t.Fatalf("GET /runs = %d %s, want %d", r.status, r.raw, tt.want)
			}
		})
	}
}

// TestLinksNeverFromHost: Location, statusUrl, eventsUrl and the discovery
// document's URLs start with the configured base URL, or else name the
// address the connection arrived on; an accepted Host header or
// X-Forwarded-* never goes into them.
func TestLinksNeverFromHost(t *testing.T) {
	for _, tt := range []struct {
		name, baseURL string
	}{
		{"configured base URL", "https://wop.example.com/base"},
		{"no base URL: the listen address", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _, _ := gateServer(t, nil, func(o *restapi.Options) {
				o.PublicURL = tt.baseURL
				o.AllowedHosts = []string{"proxy.internal"}
			})
			want := tt.baseURL
			if want == "" {
				want = srv.URL // http://127.0.0.1:port
			}
			hdr := map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "forwarded.example"}
			r := gateDo(t, srv, http.MethodPost, "/runs", "proxy.internal", `{"workflowId":"delay","inputs":{"delayMs":1}}`, hdr)
			if r.status != http.StatusCreated {
				t.Fatalf("POST /runs = %d %s", r.status, r.raw)
			}
			var created struct{ StatusURL, EventsURL string }
			_ = json.Unmarshal(r.raw, &created)
			for what, link := range map[string]string{"Location": r.header.Get("Location"), "statusUrl": created.StatusURL, "eventsUrl": created.EventsURL} {
				if !strings.HasPrefix(link, want+"/runs/") {
					t.Errorf("%s = %q, want it under %s/runs/", what, link, want)
				}
			}
			for _, v := range []string{"", "2.0"} {
				r := gateDo(t, srv, http.MethodGet, "/.well-known/openwop", "proxy.internal", "", map[string]string{"OpenWOP-Version": v, "X-Forwarded-Host": "forwarded.example"})
				if bytes.Contains(r.raw, []byte("proxy.internal")) || bytes.Contains(r.raw, []byte("forwarded.example")) ||
					!bytes.Contains(r.raw, []byte(`"`+want+`/mcp"`)) {
					t.Errorf("discovery (version %q) = %s, want URLs under %s", v, r.raw, want)
				}
			}
		})
	}
}

// TestBadInputNamesTheParameter: numeric limits are checked without
// overflow and each refusal names what was wrong.
func TestBadInputNamesTheParameter(t *testing.T) {
	srv, f, id := gateServer(t, nil, nil)
	p := "/runs/" + runid.Project(id)
	big := `{"workflowId":"delay","inputs":{"delayMs":1,"label":"` + strings.Repeat("x", 2<<20) + `"}}`
	tests := []struct {
		name, method, path, body string
		status                   int
		names                    []string
	}{
		{"poll timeout overflowing a Duration", http.MethodGet, p + "/events/poll?timeout=18446744074", "", 400, []string{"timeout", "18446744074"}},
		{"poll timeout past int64", http.MethodGet, p + "/events/poll?timeout=99999999999999999999", "", 400, []string{"timeout"}},
		{"poll timeout over the maximum", http.MethodGet, p + "/events/poll?timeout=61", "", 400, []string{"timeout", "60"}},
		{"poll timeout negative", http.MethodGet, p + "/events/poll?timeout=-1", "", 400, []string{"timeout"}},
		{"poll timeout not an integer", http.MethodGet, p + "/events/poll?timeout=1e3", "", 400, []string{"timeout"}},
		{"afterSequence past int64", http.MethodGet, p + "/events/poll?afterSequence=18446744074000000000", "", 400, []string{"afterSequence"}},
		{"limit overflowing", http.MethodGet, "/runs?limit=18446744074", "", 400, []string{"limit"}},
		{"unrepresentable input", http.MethodPost, "/runs", `{"workflowId":"delay","inputs":{"delayMs":1e309}}`, 400, []string{"delayMs", "1e309", "out of range"}},
		{"unrepresentable nested input", http.MethodPost, "/runs", `{"workflowId":"delay","inputs":{"delayMs":1,"x":[0,{"y":-2e400}]}}`, 400, []string{"x[1].y", "out of range"}},
		{"oversized body", http.MethodPost, "/runs", big, 413, []string{"bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			r := gateDo(t, srv, tt.method, tt.path, "", tt.body, nil)
			if r.status != tt.status {
				t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.path, r.status, r.raw, tt.status)
			}
			for _, n := range tt.names {
				if !strings.Contains(r.msg, n) {
					t.Errorf("message %q does not name %q", r.msg, n)
				}
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("answered after %v", d)
			}
		})
	}
	if f.StartCount() != 0 || len(f.Waits()) != 0 || len(f.Lists()) != 0 {
		t.Fatalf("refused input reached the run service: starts %d polls %v lists %d", f.StartCount(), f.Waits(), len(f.Lists()))
	}
}

// gateListClient is a Temporal client that only counts ListWorkflow calls
// (anything else would panic on the nil embedded client).
type gateListClient struct {
	client.Client
	lists atomic.Int32
}

func (c *gateListClient) ListWorkflow(context.Context, *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	c.lists.Add(1)
	return &workflowservice.ListWorkflowExecutionsResponse{NextPageToken: []byte("next")}, nil
}

// TestMalformedCursorIsRefusedAtOnce: GET /runs with a cursor the server
// did not issue answers 400 at once, naming the cursor, and Temporal is
// never asked; an issued one is accepted.
func TestMalformedCursorIsRefusedAtOnce(t *testing.T) {
	c := &gateListClient{}
	srv, _, _ := gateServer(t, runs.New(c, nil, runs.Options{}), nil)
	for _, cursor := range []string{"garbage", "bmV4dA", "%21%21", strings.Repeat("QUFB", 3000)} {
		start := time.Now()
		r := gateDo(t, srv, http.MethodGet, "/runs?cursor="+cursor, "", "", nil)
		if r.status != http.StatusBadRequest || r.code != "validation_error" || !strings.Contains(r.msg, "cursor") {
			t.Fatalf("cursor %.20q: %d %s, want 400 validation_error naming the cursor", cursor, r.status, r.raw)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("cursor %.20q answered after %v", cursor, d)
		}
	}
	if n := c.lists.Load(); n != 0 {
		t.Fatalf("Temporal was asked %d times for bad cursors", n)
	}
	r := gateDo(t, srv, http.MethodGet, "/runs", "", "", nil)
	var page struct{ NextCursor string }
	if r.status != http.StatusOK || json.Unmarshal(r.raw, &page) != nil || page.NextCursor == "" {
		t.Fatalf("GET /runs = %d %s", r.status, r.raw)
	}
	if r := gateDo(t, srv, http.MethodGet, "/runs?cursor="+page.NextCursor, "", "", nil); r.status != http.StatusOK {
		t.Fatalf("GET /runs with the issued cursor = %d %s", r.status, r.raw)
	}
}

// TestNewRefusesBadPublicURL: New answers an error, never a panic, for a
// PublicURL (or the deprecated BaseURL) that is not an absolute http(s)
// URL.
func TestNewRefusesBadPublicURL(t *testing.T) {
	cat, err := catalog.NewStatic(gateTool)
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{"wop.example.com", "ftp://wop.example.com", "https://", "://"} {
		t.Run(base, func(t *testing.T) {
			h, err := restapi.New(restapi.Options{Runs: runstest.New(), Authenticate: auth.AnonymousAuthenticator,
				Catalog: cat, PublicURL: base})
			if err == nil || h != nil {
				t.Fatalf("New(PublicURL %q) = %v, %v; want an error", base, h, err)
			}
			h, err = restapi.New(restapi.Options{Runs: runstest.New(), Authenticate: auth.AnonymousAuthenticator,
				Catalog: cat, BaseURL: base})
			if err == nil || h != nil {
				t.Fatalf("New(BaseURL %q) = %v, %v; want an error", base, h, err)
			}
		})
	}
	if _, err := restapi.New(restapi.Options{Runs: runstest.New(), Authenticate: auth.AnonymousAuthenticator,
		Catalog: cat, PublicURL: "https://wop.example.com/base"}); err != nil {
		t.Fatalf("New with a valid PublicURL: %v", err)
	}
}
