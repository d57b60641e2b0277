package restapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// testTools is a small catalog: two fixtures, a non-conformance fixture, an
// ordinary tool limited to tenant acme and a tool with a pre-run input.
var testTools = []signals.ToolSpec{
	{Name: "conformance-delay", Description: "waits delayMs", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"delayMs":{"type":"integer","minimum":0,"maximum":30000}},"required":["delayMs"],"additionalProperties":false}`)},
	{Name: "conformance-approval", Description: "asks an approval", CanSuspend: true, InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "demo-fixture", Description: "a fixture outside the conformance suite", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "acme-only", Description: "for acme", Tenants: []string{"acme"}},
	{Name: "with-prerun", Description: "asks a confirmation first", InputSchema: json.RawMessage(`{"type":"object"}`), PreRunInputs: []signals.PreRunInput{
		{Key: "confirm", Message: "Confirm?", Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)},
	}},
}

// The fake run service of the handler tests is a runs.Backend.
var _ runs.Backend = (*runstest.Fake)(nil)

// staticCatalog is a catalog.Static of specs.
func staticCatalog(t testing.TB, specs ...signals.ToolSpec) *catalog.Static {
	t.Helper()
	c, err := catalog.NewStatic(specs...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fakeAuth maps "Bearer key-<tenant>" to a subject of that tenant, and
// "Bearer approver" to the listed conformance approver of tenant acme.
func fakeAuth(r *http.Request) (signals.Subject, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return signals.Subject{}, errors.New("no bearer credential")
	}
	if tok == "approver" {
		return signals.Subject{Issuer: "test", SubjectID: "urn:conformance:listed-approver", Tenant: "acme"}, nil
	}
	tenant, ok := strings.CutPrefix(tok, "key-")
	if !ok || tenant == "" {
		return signals.Subject{}, errors.New("unknown key")
	}
	return signals.Subject{Issuer: "test", SubjectID: "urn:test:" + tenant, Tenant: tenant}, nil
}

type testServer struct {
	*httptest.Server
	runs *runstest.Fake
}

func newTestServer(t *testing.T, mutate ...func(*Options)) *testServer {
	t.Helper()
	f := runstest.New()
	opts := Options{
		Runs:         f,
		Authenticate: fakeAuth,
		Catalog:      staticCatalog(t, testTools...),
		Now:          func() time.Time { return time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC) },
	}
	for _, m := range mutate {
		m(&opts)
	}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testServer{Server: srv, runs: f}
}

// response is an HTTP answer with its JSON body decoded.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (r response) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// call sends a request with an optional bearer token and JSON body. path
// is sent as is (escapes preserved).
func call(t *testing.T, method, url, token, body string, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	// Every response is validated against the OpenAPI document.
	resp, err := (&http.Client{Transport: CheckedTransport(t, nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 && method != http.MethodHead {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			t.Fatalf("%s %s: body is not a JSON object: %v\n%s", method, url, err, raw)
		}
	}
	return out
}

func wantError(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status || r.errorCode() != code {
		t.Fatalf("got %d %s, want %d %s", r.status, r.raw, status, code)
	}
	e := r.body["error"].(map[string]any)
	if m, _ := e["message"].(string); m == "" {
		t.Fatalf("error without a message: %s", r.raw)
	}
	if len(r.body) != 1 || len(e) != 2 {
		t.Fatalf("error body has extra fields: %s", r.raw)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
}

func mustID(t *testing.T, tenant string) string {
	t.Helper()
	id, err := runid.New(tenant, nil)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

var (
	t0      = time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	acmeSub = signals.Subject{Issuer: "test", SubjectID: "urn:test:acme", Tenant: "acme"}
)

func approvalSnapshot(id string, approvers ...string) signals.Snapshot {
	return signals.Snapshot{
		RunID: id, Tool: "conformance-approval", Status: signals.StatusWaitingApproval,
		Owner: signals.Owner{Tenant: "acme", Subject: acmeSub}, CreatedAt: t0, UpdatedAt: t0.Add(time.Second),
		Interrupts: []signals.Interrupt{{
			ID: id + "-i1", NodeID: "gate", Kind: signals.KindApproval, Key: "gate",
			Title: "Approve?", Actions: []string{"accept", "reject"}, Approvers: approvers, RequestedAt: t0,
		}},
		LastSequence: 3,
	}
}

func TestDiscoveryPlain(t *testing.T) {
	s := newTestServer(t)
	r := call(t, http.MethodGet, s.URL+"/.well-known/openwop", "", "")
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	got := r.body["fixtures"]
	want := []any{"conformance-approval", "conformance-delay"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fixtures = %v, want %v", got, want)
	}
	if _, ok := r.body["mcp"]; ok {
		t.Fatalf("the header-less representation carries v2 family records: %s", r.raw)
	}
	if !strings.Contains(r.header.Get("Vary"), VersionHeader) {
		t.Fatalf("Vary = %q", r.header.Get("Vary"))
	}
}

func TestDiscoveryV2(t *testing.T) {
	tests := []struct {
		name    string
		baseURL string
		header  []string
		wantURL string
	}{
		{"from request", "", nil, "http://HOST/mcp"},
		{"forwarded proto ignored", "", []string{"X-Forwarded-Proto", "https"}, "http://HOST/mcp"},
		{"configured base", "https://wop.example.com/", nil, "https://wop.example.com/mcp"},
		{"deprecated BaseURL", "https://old.example.com/", nil, "https://old.example.com/mcp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, func(o *Options) {
				if strings.HasPrefix(tt.name, "deprecated") {
					o.BaseURL = tt.baseURL
					return
				}
				o.PublicURL = tt.baseURL
			})
			hdr := append([]string{VersionHeader, "2.0"}, tt.header...)
			r := call(t, http.MethodGet, s.URL+"/.well-known/openwop", "", "", hdr...)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
			var doc struct {
				Fixtures []string `json:"fixtures"`
				MCP      struct {
					Status           string   `json:"status"`
					Since            string   `json:"since"`
					Revisions        []string `json:"revisions"`
					PreferredVersion string   `json:"preferredVersion"`
					MinimumRevision  string   `json:"minimumRevision"`
					RefreshedAt      string   `json:"refreshedAt"`
					Profiles         []string `json:"profiles"`
					Features         []string `json:"features"`
					ServerMount      struct {
						Transports []string `json:"transports"`
					} `json:"serverMount"`
					ServerURLs []string `json:"serverUrls"`
					MRTR       struct {
						MaxRounds int `json:"maxRounds"`
					} `json:"mrtr"`
				} `json:"mcp"`
				RunList struct {
					Status      string   `json:"status"`
					MaxPageSize int      `json:"maxPageSize"`
					Filters     []string `json:"filters"`
				} `json:"runList"`
				Interrupt struct {
					Status   string   `json:"status"`
					RefKinds []string `json:"refKinds"`
				} `json:"interrupt"`
			}
			if err := json.Unmarshal(r.raw, &doc); err != nil {
				t.Fatal(err)
			}
			m := doc.MCP
			host := strings.TrimPrefix(s.URL, "http://")
			checks := []struct {
				what      string
				got, want any
			}{
				{"fixtures", doc.Fixtures, []string{"conformance-approval", "conformance-delay"}},
				{"mcp.revisions", m.Revisions, []string{"2026-07-28"}},
				{"mcp.preferredVersion", m.PreferredVersion, "2026-07-28"},
				{"mcp.minimumRevision", m.MinimumRevision, "2026-07-28"},
				{"mcp.refreshedAt", m.RefreshedAt, "2026-07-28T12:00:00Z"},
				{"mcp.profiles", m.Profiles, []string{"mcp-2026-07-28"}},
				{"mcp.features", m.Features, []string{"server-discover", "mrtr", "cacheable-lists", "extensions"}},
				{"mcp.serverMount.transports", m.ServerMount.Transports, []string{"streamable-http"}},
				{"mcp.serverUrls", m.ServerURLs, []string{strings.ReplaceAll(tt.wantURL, "HOST", host)}},
				{"mcp.mrtr.maxRounds", m.MRTR.MaxRounds, mcpmount.DefaultMRTRMaxRounds},
				{"runList.maxPageSize", doc.RunList.MaxPageSize, 100},
				{"runList.filters", doc.RunList.Filters, []string{"workflowId", "status"}},
				{"interrupt.refKinds", doc.Interrupt.RefKinds, []string{"principal"}},
			}
			for _, c := range checks {
				if !reflect.DeepEqual(c.got, c.want) {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
			for _, st := range []string{m.Status, doc.RunList.Status, doc.Interrupt.Status} {
				if st == "" || m.Since == "" {
					t.Errorf("a family record lacks status/since: %s", r.raw)
				}
			}
			if strings.Contains(string(r.raw), "io.modelcontextprotocol/tasks") {
				t.Errorf("the Tasks extension is named in the discovery document: %s", r.raw)
			}
			if got := r.header.Get(VersionHeader); got != "2.0" {
				t.Errorf("response %s = %q", VersionHeader, got)
			}
		})
	}
}

func TestAuthRequired(t *testing.T) {
	s := newTestServer(t)
	id := runid.Project(mustID(t, "acme"))
	paths := []struct{ method, path, body string }{
		{http.MethodGet, "/runs", ""},
		{http.MethodPost, "/runs", `{"workflowId":"conformance-delay","inputs":{"delayMs":1}}`},
		{http.MethodGet, "/runs/" + id, ""},
		{http.MethodPost, "/runs/" + id + "/cancel", ""},
		{http.MethodGet, "/runs/" + id + "/events/poll", ""},
		{http.MethodPost, "/runs/" + id + "/interrupts/gate", `{"resumeValue":{"action":"accept"}}`},
	}
	for _, p := range paths {
		for _, token := range []string{"", "wrong"} {
			t.Run(p.method+p.path+"/"+token, func(t *testing.T) {
				r := call(t, p.method, s.URL+p.path, token, p.body)
				wantError(t, r, http.StatusUnauthorized, "unauthenticated")
				if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Fatalf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
				}
			})
		}
	}
	if len(s.runs.Starts())+len(s.runs.CancelCalls())+len(s.runs.Lists()) != 0 {
		t.Fatal("an unauthenticated request reached the run service")
	}
}

func TestRunIDForms(t *testing.T) {
	s := newTestServer(t)
	id := mustID(t, "acme")
	s.runs.Add(signals.Snapshot{RunID: id, Tool: "conformance-delay", Status: signals.StatusRunning,
		Owner: signals.Owner{Tenant: "acme", Subject: acmeSub}})
	tenant, opaque, _ := strings.Cut(id, "/")
	tests := []struct {
		name, segment string
		status        int
		code          string
	}{
		{"projected", tenant + "~2F" + opaque, http.StatusOK, ""},
		{"percent-encoded slash", tenant + "%2F" + opaque, http.StatusOK, ""},
		{"lowercase percent", tenant + "%2f" + opaque, http.StatusOK, ""},
		{"lowercase tilde", tenant + "~2f" + opaque, http.StatusOK, ""},
		// "~Q" is never a valid escape, whatever the random opaque part holds.
		{"lone tilde", tenant + "~Q" + opaque, http.StatusBadRequest, "validation_error"},
		{"bad tilde hex", tenant + "~ZZ" + opaque, http.StatusBadRequest, "validation_error"},
		{"truncated tilde", tenant + "~2F" + opaque + "~2", http.StatusBadRequest, "validation_error"},
		{"unknown run", tenant + "~2FAAAAAAAAAAAAAAAAAAAAAAAA", http.StatusNotFound, "run_not_found"},
		{"no tenant segment", opaque, http.StatusNotFound, "run_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, http.MethodGet, s.URL+"/runs/"+tt.segment, "key-acme", "")
			if tt.code != "" {
				wantError(t, r, tt.status, tt.code)
				return
			}
			if r.status != tt.status || r.body["runId"] != id {
				t.Fatalf("got %d %s, want %d for run %s", r.status, r.raw, tt.status, id)
			}
		})
	}
	// A raw slash splits the segment: no such endpoint.
	wantError(t, call(t, http.MethodGet, s.URL+"/runs/"+id, "key-acme", ""), http.StatusNotFound, "not_found")
}

func TestGetRun(t *testing.T) {
	s := newTestServer(t)
	waiting := mustID(t, "acme")
	s.runs.Add(approvalSnapshot(waiting))
	failed := mustID(t, "acme")
	s.runs.Add(signals.Snapshot{RunID: failed, Tool: "conformance-failure", Status: signals.StatusFailed,
		Owner: signals.Owner{Tenant: "acme", Subject: acmeSub}, CreatedAt: t0, UpdatedAt: t0,
		Error: &signals.RunError{Code: "conformance_test_failure", Message: "Intentional conformance failure", RPCCode: 7}})
	done := mustID(t, "acme")
	s.runs.Add(signals.Snapshot{RunID: done, Tool: "conformance-delay", Status: signals.StatusCompleted,
		Owner: signals.Owner{Tenant: "acme", Subject: acmeSub}, CreatedAt: t0, UpdatedAt: t0,
		Outputs: json.RawMessage(`{"slept":1}`)})

	r := call(t, http.MethodGet, s.URL+"/runs/"+runid.Project(waiting), "key-acme", "")
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	for k, want := range map[string]any{
		"runId": waiting, "workflowId": "conformance-approval", "status": "waiting-approval",
		"eventLogSchemaVersion": float64(signals.EventLogSchemaVersion), "currentNodeId": "gate",
		"createdAt": "2026-07-28T10:00:00Z", "updatedAt": "2026-07-28T10:00:01Z",
	} {
		if r.body[k] != want {
			t.Errorf("%s = %v, want %v", k, r.body[k], want)
		}
	}
	owner := r.body["owner"].(map[string]any)
	if owner["tenant"] != "acme" || owner["subject"].(map[string]any)["subjectId"] != "urn:test:acme" {
		t.Errorf("owner = %v", owner)
	}
	ints := r.body["interrupts"].([]any)
	if len(ints) != 1 || ints[0].(map[string]any)["interruptId"] != waiting+"-i1" || ints[0].(map[string]any)["nodeId"] != "gate" {
		t.Errorf("interrupts = %v", ints)
	}
	if _, ok := r.body["error"]; ok {
		t.Errorf("a waiting run carries an error: %s", r.raw)
	}

	r = call(t, http.MethodGet, s.URL+"/runs/"+runid.Project(failed), "key-acme", "")
	e, _ := r.body["error"].(map[string]any)
	if r.body["status"] != "failed" || !reflect.DeepEqual(e, map[string]any{"code": "conformance_test_failure", "message": "Intentional conformance failure"}) {
		t.Errorf("failed run: %s", r.raw)
	}
	if _, ok := r.body["currentNodeId"]; ok {
		t.Errorf("a failed run carries currentNodeId: %s", r.raw)
	}

	r = call(t, http.MethodGet, s.URL+"/runs/"+runid.Project(done), "key-acme", "")
	if r.body["status"] != "completed" || !reflect.DeepEqual(r.body["outputs"], map[string]any{"slept": float64(1)}) {
		t.Errorf("completed run: %s", r.raw)
	}
}

// TestCrossTenant checks that every run path answers another tenant's run
// (existing or not) 403 id_tenant_mismatch and that nothing is changed.
func TestCrossTenant(t *testing.T) {
	s := newTestServer(t)
	real := mustID(t, "acme")
	s.runs.Add(approvalSnapshot(real))
	ghost := mustID(t, "acme")
	for _, id := range []string{real, ghost} {
		for _, form := range []string{runid.Project(id), strings.Replace(id, "/", "%2F", 1)} {
			paths := []struct{ method, path, body string }{
				{http.MethodGet, "/runs/" + form, ""},
				{http.MethodPost, "/runs/" + form + "/cancel", `{}`},
				{http.MethodGet, "/runs/" + form + "/events/poll?timeout=1", ""},
				{http.MethodPost, "/runs/" + form + "/interrupts/gate", `{"resumeValue":{"action":"accept"}}`},
			}
			for _, p := range paths {
				r := call(t, p.method, s.URL+p.path, "key-globex", p.body)
				wantError(t, r, http.StatusForbidden, "id_tenant_mismatch")
			}
		}
	}
	snap, _ := s.runs.Get(t.Context(), acmeSub, real)
	if snap.Status != signals.StatusWaitingApproval || len(snap.Resolved) != 0 {
		t.Fatalf("another tenant changed the run: %+v", snap)
	}
	// The answers for the real and the ghost run are byte-identical.
	a := call(t, http.MethodGet, s.URL+"/runs/"+runid.Project(real), "key-globex", "")
	b := call(t, http.MethodGet, s.URL+"/runs/"+runid.Project(ghost), "key-globex", "")
	if string(a.raw) != string(b.raw) {
		t.Fatalf("answers differ:\n%s\n%s", a.raw, b.raw)
	}
}

func TestListRuns(t *testing.T) {
	s := newTestServer(t)
	id := mustID(t, "acme")
	s.runs.SetListPage(runs.ListPage{Runs: []signals.Snapshot{approvalSnapshot(id)}, NextCursor: "next-1"})

	r := call(t, http.MethodGet, s.URL+"/runs?workflowId=conformance-approval&status=waiting-approval&limit=7&cursor=abc", "key-acme", "")
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	want := runs.ListRequest{Tool: "conformance-approval", Status: signals.StatusWaitingApproval, Limit: 7, Cursor: "abc"}
	if got := s.runs.Lists()[len(s.runs.Lists())-1]; got != want {
		t.Fatalf("list request %+v, want %+v", got, want)
	}
	list := r.body["runs"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["runId"] != id || r.body["nextCursor"] != "next-1" {
		t.Fatalf("body %s", r.raw)
	}

	// Last page: an empty array, no nextCursor.
	s.runs.SetListPage(runs.ListPage{})
	r = call(t, http.MethodGet, s.URL+"/runs", "key-acme", "")
	if r.status != http.StatusOK || string(r.raw) != "{\"runs\":[]}\n" {
		t.Fatalf("empty page: %d %s", r.status, r.raw)
	}

	bad := []string{
		"limit=0", "limit=101", "limit=-1", "limit=ten", "limit=1.5",
		"status=done", "status=COMPLETED", "workflowId=a%20b", "workflowId=" + strings.Repeat("x", 129),
	}
	n := len(s.runs.Lists())
	for _, q := range bad {
		t.Run(q, func(t *testing.T) {
			wantError(t, call(t, http.MethodGet, s.URL+"/runs?"+q, "key-acme", ""), http.StatusBadRequest, "validation_error")
		})
	}
	if len(s.runs.Lists()) != n {
		t.Fatal("an invalid listing reached the run service")
	}
}

func TestCancelRun(t *testing.T) {
	s := newTestServer(t)
	running := mustID(t, "acme")
	s.runs.Add(signals.Snapshot{RunID: running, Tool: "conformance-cancellable", Status: signals.StatusRunning})
	done := mustID(t, "acme")
	s.runs.Add(signals.Snapshot{RunID: done, Tool: "conformance-delay", Status: signals.StatusCompleted})

	tests := []struct {
		name, id, body string
		status         int
		code           string
		reason         string
	}{
		{"no body", running, "", http.StatusOK, "", signals.ReasonCallerRequested},
		{"empty object", running, `{}`, http.StatusOK, "", signals.ReasonCallerRequested},
		{"reason", running, `{"reason":"operator says stop"}`, http.StatusOK, "", "operator says stop"},
		{"terminal", done, `{}`, http.StatusConflict, "run_terminal", signals.ReasonCallerRequested},
		{"reason not a string", running, `{"reason":5}`, http.StatusBadRequest, "validation_error", ""},
		{"body not an object", running, `[1]`, http.StatusBadRequest, "validation_error", ""},
		{"reason too long", running, `{"reason":"` + strings.Repeat("r", maxReasonLen+1) + `"}`, http.StatusBadRequest, "validation_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := len(s.runs.CancelCalls())
			r := call(t, http.MethodPost, s.URL+"/runs/"+runid.Project(tt.id)+"/cancel", "key-acme", tt.body)
			if tt.code != "" {
				wantError(t, r, tt.status, tt.code)
			} else if r.status != tt.status || r.body["runId"] != tt.id || r.body["status"] != "cancelling" || len(r.body) != 2 {
				t.Fatalf("got %d %s", r.status, r.raw)
			}
			if tt.reason == "" {
				if len(s.runs.CancelCalls()) != n {
					t.Fatal("an invalid cancel reached the run service")
				}
				return
			}
			if got := s.runs.CancelCalls()[len(s.runs.CancelCalls())-1]; got != (runstest.CancelCall{RunID: tt.id, Reason: tt.reason}) {
				t.Fatalf("cancel %v, want reason %q", got, tt.reason)
			}
		})
	}
}

func TestPollEvents(t *testing.T) {
	s := newTestServer(t)
	id := mustID(t, "acme")
	var events []signals.Event
	for i, typ := range []string{signals.EventRunStarted, signals.EventNodeStarted, signals.EventNodeCompleted, signals.EventRunCompleted} {
		events = append(events, signals.Event{EventID: fmt.Sprint("e", i), RunID: id, Type: typ, Sequence: i,
			SchemaVersion: 1, Payload: json.RawMessage(`{}`), Timestamp: t0})
	}
	s.runs.Add(signals.Snapshot{RunID: id, Tool: "conformance-delay", Status: signals.StatusCompleted}, events...)
	base := s.URL + "/runs/" + runid.Project(id) + "/events/poll"

	r := call(t, http.MethodGet, base+"?afterSequence=1&timeout=30", "key-acme", "")
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	if r.body["runId"] != id || r.body["lastSequence"] != float64(3) || r.body["status"] != "completed" || r.body["isTerminal"] != true {
		t.Fatalf("body %s", r.raw)
	}
	got := r.body["events"].([]any)
	if len(got) != 2 || got[0].(map[string]any)["sequence"] != float64(2) || got[1].(map[string]any)["type"] != "run.completed" {
		t.Fatalf("events %s", r.raw)
	}
	for _, k := range []string{"eventId", "runId", "type", "payload", "timestamp", "sequence", "schemaVersion"} {
		if _, ok := got[0].(map[string]any)[k]; !ok {
			t.Fatalf("event lacks %s: %s", k, r.raw)
		}
	}
	if w := s.runs.Waits()[len(s.runs.Waits())-1]; w != 30*time.Second {
		t.Fatalf("wait %v, want 30s", w)
	}

	r = call(t, http.MethodGet, base, "key-acme", "")
	if len(r.body["events"].([]any)) != 4 || s.runs.Waits()[len(s.runs.Waits())-1] != 0 {
		t.Fatalf("defaults: %s (wait %v)", r.raw, s.runs.Waits()[len(s.runs.Waits())-1])
	}
	r = call(t, http.MethodGet, base+"?afterSequence=3", "key-acme", "")
	if string(mustMarshal(t, r.body["events"])) != "[]" {
		t.Fatalf("no new events must be []: %s", r.raw)
	}

	n := len(s.runs.Waits())
	for _, q := range []string{"timeout=61", "timeout=-1", "timeout=abc", "timeout=1.5", "afterSequence=-2", "afterSequence=x"} {
		t.Run(q, func(t *testing.T) {
			wantError(t, call(t, http.MethodGet, base+"?"+q, "key-acme", ""), http.StatusBadRequest, "validation_error")
		})
	}
	if len(s.runs.Waits()) != n {
		t.Fatal("an invalid poll reached the run service")
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestResolveInterrupt(t *testing.T) {
	tests := []struct {
		name      string
		token     string
		approvers []string
		node      string
		body      string
		status    int
		code      string
		action    signals.Action
	}{
		{"accept", "key-acme", nil, "gate", `{"resumeValue":{"action":"accept"}}`, http.StatusOK, "", signals.ActionAccept},
		{"reject", "key-acme", nil, "gate", `{"resumeValue":{"action":"reject"}}`, http.StatusOK, "", signals.ActionDecline},
		{"listed approver", "approver", []string{"urn:conformance:listed-approver"}, "gate", `{"resumeValue":{"action":"accept"}}`, http.StatusOK, "", signals.ActionAccept},
		{"not an approver", "key-acme", []string{"urn:conformance:listed-approver"}, "gate", `{"resumeValue":{"action":"accept"}}`, http.StatusForbidden, "forbidden", ""},
		{"unknown action", "key-acme", nil, "gate", `{"resumeValue":{"action":"maybe"}}`, http.StatusBadRequest, "validation_error", ""},
		{"extra key", "key-acme", nil, "gate", `{"resumeValue":{"action":"accept","x":1}}`, http.StatusBadRequest, "validation_error", ""},
		{"action not a string", "key-acme", nil, "gate", `{"resumeValue":{"action":true}}`, http.StatusBadRequest, "validation_error", ""},
		{"string resumeValue", "key-acme", nil, "gate", `{"resumeValue":"accept"}`, http.StatusBadRequest, "validation_error", ""},
		{"missing resumeValue", "key-acme", nil, "gate", `{}`, http.StatusBadRequest, "validation_error", ""},
		{"no body", "key-acme", nil, "gate", ``, http.StatusBadRequest, "validation_error", ""},
		{"invalid JSON", "key-acme", nil, "gate", `{"resumeValue":`, http.StatusBadRequest, "validation_error", ""},
		{"other node", "key-acme", nil, "other", `{"resumeValue":{"action":"accept"}}`, http.StatusNotFound, "interrupt_not_found", ""},
		{"bad node id", "key-acme", nil, "a%20b", `{"resumeValue":{"action":"accept"}}`, http.StatusBadRequest, "validation_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t)
			id := mustID(t, "acme")
			s.runs.Add(approvalSnapshot(id, tt.approvers...))
			r := call(t, http.MethodPost, s.URL+"/runs/"+runid.Project(id)+"/interrupts/"+tt.node, tt.token, tt.body)
			if tt.code != "" {
				wantError(t, r, tt.status, tt.code)
				if tt.status == http.StatusBadRequest && len(s.runs.ResolveCalls()) != 0 {
					t.Fatal("an invalid resolution reached the run service")
				}
				return
			}
			if r.status != tt.status || r.body["runId"] != id || r.body["interruptId"] != id+"-i1" || r.body["nodeId"] != "gate" || r.body["status"] != "running" {
				t.Fatalf("got %d %s", r.status, r.raw)
			}
			if len(s.runs.ResolveCalls()) != 1 {
				t.Fatalf("%d resolutions sent", len(s.runs.ResolveCalls()))
			}
			res := s.runs.ResolveCalls()[0]
			if res.Action != tt.action || res.InterruptID != id+"-i1" || res.RequestID == "" || res.ResolvedBy.Tenant != "acme" {
				t.Fatalf("resolution %+v", res)
			}
		})
	}
}

func TestResolveTwice(t *testing.T) {
	s := newTestServer(t)
	id := mustID(t, "acme")
	s.runs.Add(approvalSnapshot(id))
	url := s.URL + "/runs/" + runid.Project(id) + "/interrupts/gate"
	body := `{"resumeValue":{"action":"accept"}}`
	if r := call(t, http.MethodPost, url, "key-acme", body); r.status != http.StatusOK {
		t.Fatalf("first: %d %s", r.status, r.raw)
	}
	// The interrupt is no longer open; the log shows it was resolved.
	wantError(t, call(t, http.MethodPost, url, "key-acme", body), http.StatusConflict, "interrupt_already_resolved")
}

// TestResolveRace sends concurrent resolutions: exactly one is applied, the
// others are 409 (the fake answers ErrAlreadyResolved like the service).
func TestResolveRace(t *testing.T) {
	s := newTestServer(t)
	id := mustID(t, "acme")
	s.runs.Add(approvalSnapshot(id))
	url := s.URL + "/runs/" + runid.Project(id) + "/interrupts/gate"
	const n = 8
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = call(t, http.MethodPost, url, "key-acme", `{"resumeValue":{"action":"accept"}}`).status
		}()
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusConflict:
		default:
			t.Fatalf("unexpected status %d", c)
		}
	}
	if ok != 1 {
		t.Fatalf("%d resolutions succeeded, want 1 (%v)", ok, codes)
	}
}

func TestResolveTerminalRun(t *testing.T) {
	s := newTestServer(t)
	id := mustID(t, "acme")
	snap := approvalSnapshot(id)
	snap.Status = signals.StatusCancelled
	s.runs.Add(snap)
	wantError(t, call(t, http.MethodPost, s.URL+"/runs/"+runid.Project(id)+"/interrupts/gate", "key-acme",
		`{"resumeValue":{"action":"accept"}}`), http.StatusConflict, "run_terminal")
}

func TestResolveClarification(t *testing.T) {
	s := newTestServer(t)
	id := mustID(t, "acme")
	s.runs.Add(signals.Snapshot{RunID: id, Status: signals.StatusWaitingInput, Interrupts: []signals.Interrupt{{
		ID: id + "-i1", NodeID: "ask", Kind: signals.KindClarification,
		Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
	}}})
	url := s.URL + "/runs/" + runid.Project(id) + "/interrupts/ask"
	wantError(t, call(t, http.MethodPost, url, "key-acme", `{"resumeValue":{"name":5}}`), http.StatusBadRequest, "validation_error")
	r := call(t, http.MethodPost, url, "key-acme", `{"resumeValue":{"name":"Ada"}}`)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if res := s.runs.ResolveCalls()[0]; res.Action != signals.ActionAccept || string(res.Content) != `{"name":"Ada"}` {
		t.Fatalf("resolution %+v", res)
	}
}

func TestCreateRun(t *testing.T) {
	tests := []struct {
		name, token, body string
		status            int
		code              string
		wantArgs          string
	}{
		{"ok", "key-acme", `{"workflowId":"conformance-delay","inputs":{"delayMs":200}}`, http.StatusCreated, "", `{"delayMs":200}`},
		{"no inputs", "key-acme", `{"workflowId":"conformance-approval"}`, http.StatusCreated, "", `{}`},
		{"tenant-limited tool, its tenant", "key-acme", `{"workflowId":"acme-only"}`, http.StatusCreated, "", `{}`},
		{"tenant-limited tool, another tenant", "key-globex", `{"workflowId":"acme-only"}`, http.StatusNotFound, "workflow_not_found", ""},
		{"unknown workflow", "key-acme", `{"workflowId":"nope"}`, http.StatusNotFound, "workflow_not_found", ""},
		{"missing workflowId", "key-acme", `{"inputs":{}}`, http.StatusBadRequest, "validation_error", ""},
		{"missing required input", "key-acme", `{"workflowId":"conformance-delay","inputs":{}}`, http.StatusBadRequest, "validation_error", ""},
		{"out of range", "key-acme", `{"workflowId":"conformance-delay","inputs":{"delayMs":30001}}`, http.StatusBadRequest, "validation_error", ""},
		{"wrong type", "key-acme", `{"workflowId":"conformance-delay","inputs":{"delayMs":"soon"}}`, http.StatusBadRequest, "validation_error", ""},
		{"unknown input", "key-acme", `{"workflowId":"conformance-delay","inputs":{"delayMs":1,"x":2}}`, http.StatusBadRequest, "validation_error", ""},
		{"inputs not an object", "key-acme", `{"workflowId":"conformance-delay","inputs":[1]}`, http.StatusBadRequest, "validation_error", ""},
		{"body not JSON", "key-acme", `workflowId=x`, http.StatusBadRequest, "validation_error", ""},
		{"no body", "key-acme", ``, http.StatusBadRequest, "validation_error", ""},
		{"pre-run answered", "key-acme", `{"workflowId":"with-prerun","preRunInputs":{"confirm":{"ok":true}}}`, http.StatusCreated, "", `{}`},
		{"pre-run missing", "key-acme", `{"workflowId":"with-prerun"}`, http.StatusBadRequest, "validation_error", ""},
		{"pre-run invalid", "key-acme", `{"workflowId":"with-prerun","preRunInputs":{"confirm":{"ok":"yes"}}}`, http.StatusBadRequest, "validation_error", ""},
		{"pre-run unknown key", "key-acme", `{"workflowId":"conformance-approval","preRunInputs":{"x":{}}}`, http.StatusBadRequest, "validation_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t)
			r := call(t, http.MethodPost, s.URL+"/runs", tt.token, tt.body)
			if tt.code != "" {
				wantError(t, r, tt.status, tt.code)
				if len(s.runs.Starts()) != 0 {
					t.Fatal("a refused request started a run")
				}
				return
			}
			if r.status != tt.status || len(s.runs.Starts()) != 1 {
				t.Fatalf("got %d %s", r.status, r.raw)
			}
			st := s.runs.Starts()[0]
			if st.Transport != signals.TransportREST || st.Caller.Tenant != "acme" || string(st.Arguments) != tt.wantArgs {
				t.Fatalf("start request %+v", st)
			}
			var body struct {
				WorkflowID string `json:"workflowId"`
			}
			if err := json.Unmarshal([]byte(tt.body), &body); err != nil || st.Tool.Name != body.WorkflowID {
				t.Fatalf("started tool %+v, want %q", st.Tool, body.WorkflowID)
			}
			id, _ := r.body["runId"].(string)
			if !runid.Valid(id) || runid.Tenant(id) != "acme" {
				t.Fatalf("runId %q", id)
			}
			statusURL := s.URL + "/runs/" + runid.Project(id)
			if r.body["status"] != "running" || r.body["statusUrl"] != statusURL ||
				r.body["eventsUrl"] != statusURL+"/events/poll" || r.header.Get("Location") != statusURL {
				t.Fatalf("body %s, Location %q", r.raw, r.header.Get("Location"))
			}
			// The minted id resolves at once.
			if g := call(t, http.MethodGet, statusURL, tt.token, ""); g.status != http.StatusOK || g.body["runId"] != id {
				t.Fatalf("GET statusUrl: %d %s", g.status, g.raw)
			}
		})
	}
}

func TestServiceErrors(t *testing.T) {
	id := runid.Project("acme/AAAAAAAAAAAAAAAAAAAAAAAA")
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{runs.ErrNotFound, http.StatusNotFound, "run_not_found"},
		{fmt.Errorf("list: %w: bad", runs.ErrBadCursor), http.StatusBadRequest, "validation_error"},
		{fmt.Errorf("wrapped: %w", runs.ErrTenantMismatch), http.StatusForbidden, "id_tenant_mismatch"},
		{errors.New("temporal exploded: secret detail"), http.StatusInternalServerError, "internal_error"},
	}
	paths := []struct{ method, path, body string }{
		{http.MethodGet, "/runs", ""},
		{http.MethodPost, "/runs", `{"workflowId":"conformance-approval"}`},
		{http.MethodGet, "/runs/" + id, ""},
		{http.MethodPost, "/runs/" + id + "/cancel", ""},
		{http.MethodGet, "/runs/" + id + "/events/poll", ""},
		{http.MethodPost, "/runs/" + id + "/interrupts/gate", `{"resumeValue":{"action":"accept"}}`},
	}
	for _, tt := range tests {
		for _, p := range paths {
			if p.path == "/runs" && p.method == http.MethodGet && errors.Is(tt.err, runs.ErrNotFound) {
				continue // listRuns names no run: the service never answers it so (nor does the OpenAPI document list a 404)
			}
			t.Run(tt.code+p.method+p.path, func(t *testing.T) {
				s := newTestServer(t)
				s.runs.SetErr(tt.err)
				r := call(t, p.method, s.URL+p.path, "key-acme", p.body)
				wantError(t, r, tt.status, tt.code)
				if strings.Contains(string(r.raw), "secret") {
					t.Fatalf("internal detail leaked: %s", r.raw)
				}
			})
		}
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	s := newTestServer(t)
	id := runid.Project(mustID(t, "acme"))
	wantError(t, call(t, http.MethodGet, s.URL+"/nope", "key-acme", ""), http.StatusNotFound, "not_found")
	for _, p := range []struct{ method, path, allow string }{
		{http.MethodDelete, "/runs/" + id, "GET, HEAD"},
		{http.MethodGet, "/runs/" + id + "/cancel", "POST"},
		{http.MethodPut, "/runs", "GET, POST, HEAD"},
		{http.MethodPost, "/.well-known/openwop", "GET, HEAD"},
	} {
		r := call(t, p.method, s.URL+p.path, "key-acme", "")
		wantError(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
		if r.header.Get("Allow") != p.allow {
			t.Errorf("%s %s: Allow %q, want %q", p.method, p.path, r.header.Get("Allow"), p.allow)
		}
	}
}

func TestBodyTooLarge(t *testing.T) {
	s := newTestServer(t)
	body := `{"workflowId":"conformance-approval","inputs":{"x":"` + strings.Repeat("a", maxBodyBytes) + `"}}`
	wantError(t, call(t, http.MethodPost, s.URL+"/runs", "key-acme", body), http.StatusRequestEntityTooLarge, "validation_error")
}

// TestPollEventsWaitError: a long poll whose wait fails with a transport
// error answers the log as it is; a known outcome is not retried.
func TestPollEventsWaitError(t *testing.T) {
	s := newTestServer(t)
	id := mustID(t, "acme")
	s.runs.Add(signals.Snapshot{RunID: id, Status: signals.StatusRunning},
		signals.Event{RunID: id, Type: signals.EventRunStarted, Sequence: 0})
	base := s.URL + "/runs/" + runid.Project(id) + "/events/poll?afterSequence=-1&timeout=5"

	s.runs.SetWaitErr(errors.New("follow history: rpc deadline exceeded"))
	r := call(t, http.MethodGet, base, "key-acme", "")
	if r.status != http.StatusOK || len(r.body["events"].([]any)) != 1 || r.body["status"] != "running" {
		t.Fatalf("got %d %s", r.status, r.raw)
	}
	if got := s.runs.Waits()[len(s.runs.Waits())-2:]; got[0] != 5*time.Second || got[1] != 0 {
		t.Fatalf("waits %v, want [5s 0s]", got)
	}

	s.runs.SetWaitErr(runs.ErrTenantMismatch)
	n := len(s.runs.Waits())
	wantError(t, call(t, http.MethodGet, base, "key-acme", ""), http.StatusForbidden, "id_tenant_mismatch")
	if len(s.runs.Waits()) != n+1 {
		t.Fatalf("a known outcome was retried: %v", s.runs.Waits()[n:])
	}
}

// TestResolveLosesToRunEnd: the interrupt is open when read, but another
// resolution completes the run before this one is applied (the service
// answers ErrTerminal): the answer is interrupt_already_resolved, and
// run_terminal when the run ended without resolving it.
func TestResolveLosesToRunEnd(t *testing.T) {
	for _, tt := range []struct {
		name     string
		resolved bool
		code     string
	}{
		{"resolved by another", true, "interrupt_already_resolved"},
		{"run cancelled", false, "run_terminal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t)
			id := mustID(t, "acme")
			s.runs.Add(approvalSnapshot(id), signals.Event{RunID: id, Type: signals.EventNodeSuspended, NodeID: "gate", Sequence: 0})
			s.runs.BeforeResolve(func(r *runstest.Run) {
				r.Snapshot.Status = signals.StatusCancelled
				r.Snapshot.Interrupts = nil
				if tt.resolved {
					r.Snapshot.Status = signals.StatusCompleted
					r.Events = append(r.Events, signals.Event{RunID: id, Type: signals.EventInterruptResolved, Sequence: 1,
						Payload: json.RawMessage(`{"nodeId":"gate","interruptId":"` + id + `-i1"}`)})
				}
			})
			wantError(t, call(t, http.MethodPost, s.URL+"/runs/"+runid.Project(id)+"/interrupts/gate", "key-acme",
				`{"resumeValue":{"action":"accept"}}`), http.StatusConflict, tt.code)
		})
	}
}
