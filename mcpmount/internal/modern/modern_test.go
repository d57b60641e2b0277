package modern

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap/zaptest"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/requeststate"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// The modern dialect's checks and encodings, over a real core on the fake
// run service.

// created is when every run of these tests was created; updated when it
// was last updated.
var (
	created = time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)
	updated = created.Add(2 * time.Second)
)

// newDialect builds the dialect over a core on f, with a greet tool that
// completes at once and a slow one that runs on.
func newDialect(t *testing.T, f *runstest.Fake, ctl *admission.Controller) *Dialect {
	t.Helper()
	cat, err := catalog.NewStatic(
		signals.ToolSpec{Name: "greet", Description: "says hello", TaskSupport: signals.TaskForbidden,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		signals.ToolSpec{Name: "slow", Description: "runs on", TaskSupport: signals.TaskOptional})
	if err != nil {
		t.Fatal(err)
	}
	f.OnStart(func(req runs.NewRun, s *signals.Snapshot) {
		s.CreatedAt, s.UpdatedAt = created, updated
		if req.Tool.Name == "greet" {
			var a struct{ Name string }
			_ = json.Unmarshal(req.Arguments, &a)
			s.Status, s.StatusMessage = signals.StatusCompleted, signals.StatusCompleted.Message()
			s.Result = &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: "Hello, " + a.Name + "!"}}}
		}
	})
	f.OnCancel(func(s *signals.Snapshot) {
		s.Status, s.StatusMessage = signals.StatusCancelled, signals.StatusCancelled.Message()
	})
	states, err := requeststate.NewCodec(make([]byte, 32), time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	pacer := core.NewPacer(500 * time.Millisecond)
	c, err := core.New(core.Options{Runs: f, Catalog: cat, Log: zaptest.NewLogger(t), States: states, Admission: ctl, Pacer: pacer,
		MaxRounds: 3, MaxWait: 5 * time.Second, KeepAlive: time.Second, NoCompanions: true, NoRunList: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Tracker().Wait)
	return New(Options{Parts: wire.Parts{Core: c, Projector: wire.Projector{Pacer: pacer}, Log: zaptest.NewLogger(t),
		Implementation: &mcp.Implementation{Name: "test-mount", Version: "1.2.3"}}, Listening: context.Background()})
}

// serverInfo is the _meta every 2026-07-28 result carries.
const serverInfo = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"test-mount","version":"1.2.3"}}`

// meta is the _meta of a request: the protocol version, and the client
// capabilities caps.
func meta(version, caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

const tasksCaps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// addRun stores a run of the anonymous caller and returns its task id.
func addRun(t *testing.T, f *runstest.Fake, status signals.Status, mutate ...func(*signals.Snapshot)) string {
	t.Helper()
	caller := auth.Anonymous()
	id, err := runid.New(caller.Tenant, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := signals.Snapshot{RunID: id, Tool: "slow", Status: status, StatusMessage: status.Message(), CreatedAt: created, UpdatedAt: updated,
		Owner: signals.Owner{Tenant: caller.Tenant, Subject: caller}}
	for _, m := range mutate {
		m(&s)
	}
	f.Add(s)
	return runid.Project(id)
}

// sent records the messages a stream's answer wrote.
type sent struct {
	mu   sync.Mutex
	msgs []string
}

func (s *sent) send(_ context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, string(b))
	return nil
}

// assertJSON fails unless got and want are the same JSON value.
func assertJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("decode %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("decode %s: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("JSON = %s\nwant   %s", gb, wb)
	}
}

// TestServeMessageEncoding: each method's answer on a message stream,
// exact: results labelled complete with the server's info, the Tasks
// extension's shapes, and the JSON-RPC errors of bad input.
func TestServeMessageEncoding(t *testing.T) {
	type tc struct {
		name, method, params, want string
	}
	cases := func(f *runstest.Fake) []tc {
		working := addRun(t, f, signals.StatusRunning)
		v := meta(wire.ProtocolVersion, tasksCaps)
		task := func(id, status string) string {
			return `"taskId":"` + id + `","status":"` + status + `","statusMessage":"` + signals.StatusRunning.Message() +
				`","createdAt":"2026-07-28T09:00:00Z","lastUpdatedAt":"2026-07-28T09:00:02Z","ttlMs":null,"pollIntervalMs":500`
		}
		return []tc{
			{"a tool result", "tools/call", `{"name":"greet","arguments":{"name":"Ada"},` + meta(wire.ProtocolVersion, `{}`) + `}`,
				`{"jsonrpc":"2.0","id":1,"result":{` + serverInfo + `,"resultType":"complete","content":[{"type":"text","text":"Hello, Ada!"}],"isError":false}}`},
			{"a tool-input error", "tools/call", `{"name":"greet","arguments":{"name":7},` + meta(wire.ProtocolVersion, `{}`) + `}`, ""},
			{"tasks/get", "tasks/get", `{"taskId":"` + working + `",` + v + `}`,
				`{"jsonrpc":"2.0","id":1,"result":{` + serverInfo + `,"resultType":"complete",` + task(working, "working") + `}}`},
			{"tasks/get of an unknown task", "tasks/get", `{"taskId":"nope",` + v + `}`,
				`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"task not found"}}`},
			{"tasks/get without the extension", "tasks/get", `{"taskId":"` + working + `",` + meta(wire.ProtocolVersion, `{}`) + `}`,
				`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"tasks/get requires the client capability extensions[\"io.modelcontextprotocol/tasks\"]",` +
					`"data":{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`},
			{"tasks/update with responses that are no object", "tasks/update", `{"taskId":"` + working + `","inputResponses":[1],` + v + `}`,
				`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"tasks/update: inputResponses must be an object keyed by input request"}}`},
			{"tasks/cancel", "tasks/cancel", `{"taskId":"` + working + `",` + v + `}`,
				`{"jsonrpc":"2.0","id":1,"result":{` + serverInfo + `,"resultType":"complete"}}`},
			{"an unsupported version", "tasks/get", `{"taskId":"` + working + `",` + meta("2025-01-01", tasksCaps) + `}`,
				`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"unsupported protocol version \"2025-01-01\"",` +
					`"data":{"requested":"2025-01-01","supported":["2026-07-28"]}}}`},
			{"a method not served", "tasks/list", `{` + v + `}`,
				`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: \"tasks/list\""}}`},
			{"no protocol version", "tasks/get", `{"taskId":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`,
				`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"missing or invalid _meta field \"io.modelcontextprotocol/protocolVersion\""}}`},
			{"capabilities that are no object", "tasks/get", `{"taskId":"x",` + meta(wire.ProtocolVersion, `[]`) + `}`,
				`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"missing or invalid _meta field \"io.modelcontextprotocol/clientCapabilities\""}}`},
			{"a bad clientInfo", "tasks/get", `{"taskId":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
				`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":7}}`,
				`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid _meta field \"io.modelcontextprotocol/clientInfo\""}}`},
			{"params that are no object", "tasks/get", `[1]`,
				`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid params: params must be an object"}}`},
			{"a tool name that is no string", "tools/call", `{"name":7,` + v + `}`,
				`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"failed to extract name from parameters for method \"tools/call\""}}`},
		}
	}
	f := runstest.New()
	d := newDialect(t, f, nil)
	for _, tt := range cases(f) {
		t.Run(tt.name, func(t *testing.T) {
			id, _ := jsonrpc.MakeID(float64(1))
			var s sent
			claim := d.tracker.Open(context.Background())
			d.ServeMessage(context.Background(), auth.Anonymous(), &jsonrpc.Request{ID: id, Method: tt.method, Params: json.RawMessage(tt.params)}, claim, s.send)
			claim.Settle(true)
			if len(s.msgs) != 1 {
				t.Fatalf("sent %v, want one answer", s.msgs)
			}
			if tt.want == "" { // a tool error: its text is the catalog's
				var r struct {
					Result struct {
						ResultType string
						IsError    bool
						Content    []signals.Content
					}
				}
				if err := json.Unmarshal([]byte(s.msgs[0]), &r); err != nil || r.Result.ResultType != "complete" || !r.Result.IsError || len(r.Result.Content) != 1 {
					t.Fatalf("answer = %s, want a complete tool error", s.msgs[0])
				}
				return
			}
			assertJSON(t, s.msgs[0], tt.want)
		})
	}
	if reason, ok := f.CancelReason(f.LastID()); ok {
		t.Fatalf("greet's run was cancelled (%s)", reason)
	}
}

// TestServeMessageCreatesTask: a tools/call of a client that declared the
// Tasks extension answers the CreateTaskResult of its run, exact.
func TestServeMessageCreatesTask(t *testing.T) {
	f := runstest.New()
	d := newDialect(t, f, nil)
	id, _ := jsonrpc.MakeID("c1")
	var s sent
	claim := d.tracker.Open(context.Background())
	d.ServeMessage(context.Background(), auth.Anonymous(), &jsonrpc.Request{ID: id, Method: "tools/call",
		Params: json.RawMessage(`{"name":"slow","arguments":{},` + meta(wire.ProtocolVersion, tasksCaps) + `}`)}, claim, s.send)
	claim.Settle(true)
	if len(s.msgs) != 1 {
		t.Fatalf("sent %v, want one answer", s.msgs)
	}
	assertJSON(t, s.msgs[0], `{"jsonrpc":"2.0","id":"c1","result":{`+serverInfo+`,"resultType":"task","taskId":"`+runid.Project(f.LastID())+
		`","status":"working","statusMessage":"`+signals.StatusRunning.Message()+
		`","createdAt":"2026-07-28T09:00:00Z","lastUpdatedAt":"2026-07-28T09:00:02Z","ttlMs":null,"pollIntervalMs":500}}`)
}

// TestValidate: the 2026-07-28 checks of an HTTP request, in their order
// (_meta, headers against the body, version, method), each refusal
// written exactly; Mcp-Name in the base64 form is decoded for the SDK.
func TestValidate(t *testing.T) {
	v := meta(wire.ProtocolVersion, `{}`)
	headers := func(method, name string) map[string]string {
		return map[string]string{HeaderProtocolVersion: wire.ProtocolVersion, HeaderMethod: method, HeaderName: name}
	}
	mismatch := func(message string) string {
		return `{"error":{"code":-32020,"message":` + quote(message) + `},"id":3,"jsonrpc":"2.0"}`
	}
	tests := []struct {
		name, method, params string
		header               map[string]string
		status               int
		want                 string
	}{
		{"a good call", "tools/call", `{"name":"greet",` + v + `}`, headers("tools/call", "greet"), 0, ""},
		{"a base64 name", "tools/call", `{"name":"grüße",` + v + `}`, headers("tools/call", "=?base64?Z3LDvMOfZQ==?="), 0, ""},
		{"no version header", "tools/call", `{"name":"greet",` + v + `}`, map[string]string{HeaderMethod: "tools/call", HeaderName: "greet"}, 400,
			mismatch("missing required MCP-Protocol-Version header")},
		{"another version in the header", "tools/list", `{` + v + `}`, map[string]string{HeaderProtocolVersion: "2025-11-25"}, 400,
			mismatch(`header mismatch: MCP-Protocol-Version "2025-11-25" does not match _meta io.modelcontextprotocol/protocolVersion "2026-07-28"`)},
		{"no method header", "tools/list", `{` + v + `}`, map[string]string{HeaderProtocolVersion: wire.ProtocolVersion}, 400,
			mismatch("missing required Mcp-Method header")},
		{"another method in the header", "tools/list", `{` + v + `}`, headers("tools/call", ""), 400,
			mismatch(`header mismatch: Mcp-Method "tools/call" does not match method "tools/list"`)},
		{"no name header", "tasks/get", `{"taskId":"t1",` + v + `}`, headers("tasks/get", ""), 400,
			mismatch(`missing required Mcp-Name header for method "tasks/get"`)},
		{"another name", "tasks/get", `{"taskId":"t1",` + v + `}`, headers("tasks/get", "t2"), 400,
			mismatch("header mismatch: Mcp-Name does not match params.taskId")},
		{"a bad base64 name", "resources/read", `{"uri":"x",` + v + `}`, headers("resources/read", "=?base64?!!?="), 400,
			mismatch("Mcp-Name header has invalid base64 encoding")},
		{"a version not served", "tools/list", `{` + meta("2030-01-01", `{}`) + `}`,
			map[string]string{HeaderProtocolVersion: "2030-01-01", HeaderMethod: "tools/list"}, 400,
			`{"error":{"code":-32022,"data":{"requested":"2030-01-01","supported":["2026-07-28"]},"message":"unsupported protocol version \"2030-01-01\""},"id":3,"jsonrpc":"2.0"}`},
		{"a method not served", "ping", `{` + v + `}`, headers("ping", ""), 404,
			`{"error":{"code":-32601,"message":"method not found: \"ping\""},"id":3,"jsonrpc":"2.0"}`},
		{"the _meta checks come first", "ping", `{"_meta":{}}`, nil, 400,
			`{"error":{"code":-32602,"message":"missing or invalid _meta field \"io.modelcontextprotocol/protocolVersion\""},"id":3,"jsonrpc":"2.0"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			for k, v := range tt.header {
				if v != "" {
					r.Header.Set(k, v)
				}
			}
			msg := &wire.Message{JSONRPC: "2.0", ID: json.RawMessage(`3`), Method: tt.method, Params: json.RawMessage(tt.params)}
			params, meta, perr := wire.DecodeParams(msg.Params)
			e, bad := Validate(r, msg, params, meta, perr)
			if bad != (tt.want != "") {
				t.Fatalf("refused = %t (%+v), want %t", bad, e, tt.want != "")
			}
			if !bad {
				var name string
				_ = json.Unmarshal(params["name"], &name)
				if r.Header.Get(HeaderName) != name {
					t.Fatalf("Mcp-Name = %q after the checks, want %q", r.Header.Get(HeaderName), name)
				}
				return
			}
			w := httptest.NewRecorder()
			wire.WriteRefusal(w, e)
			if w.Code != tt.status || w.Body.String() != tt.want {
				t.Fatalf("refusal = %d %s\nwant      %d %s", w.Code, w.Body, tt.status, tt.want)
			}
		})
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// serveHTTP serves one 2026-07-28 POST of method with params through
// Serve, as the mount hands it over, and returns the response.
func serveHTTP(d *Dialect, method, name, params, accept string) *httptest.ResponseRecorder {
	body := `{"jsonrpc":"2.0","id":5,"method":"` + method + `","params":` + params + `}`
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set("Accept", accept)
	r.Header.Set(HeaderProtocolVersion, wire.ProtocolVersion)
	r.Header.Set(HeaderMethod, method)
	if name != "" {
		r.Header.Set(HeaderName, name)
	}
	in := &wire.Incoming{Start: time.Now(), Header: r.Header, Caller: auth.Anonymous(), Body: []byte(body), Modern: true,
		Msg: wire.Message{JSONRPC: "2.0", ID: json.RawMessage(`5`), Method: method, Params: json.RawMessage(params)}, Accept: wire.Negotiate(r)}
	in.Params, in.Meta, _ = wire.DecodeParams(in.Msg.Params)
	w := httptest.NewRecorder()
	d.Serve(w, r, in)
	return w
}

// TestServeHTTP: what Serve writes: a JSON answer (200, or SEP-2575's
// status for an error), an SSE event for a client that prefers a stream,
// the Accept refusal, and an overloaded call's 503 with Retry-After.
func TestServeHTTP(t *testing.T) {
	ctl, err := admission.New(admission.Options{TenantMax: 1, RetryAfter: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := runstest.New()
	d := newDialect(t, f, ctl)
	v := meta(wire.ProtocolVersion, `{}`)
	both := "application/json, text/event-stream"
	call := `{"name":"greet","arguments":{"name":"Ada"},` + v + `}`
	result := `{"jsonrpc":"2.0","id":5,"result":{` + serverInfo + `,"resultType":"complete","content":[{"type":"text","text":"Hello, Ada!"}],"isError":false}}`
	tests := []struct {
		name, method, mcpName, params, accept string
		hold                                  bool
		status                                int
		contentType, retryAfter, want         string
	}{
		{"a JSON answer", "tools/call", "greet", call, both, false, 200, "application/json", "", result},
		{"an SSE answer", "tools/call", "greet", call, "text/event-stream, application/json", false, 200, "text/event-stream", "",
			"event: message\ndata: " + result + "\n\n"},
		{"an error with a status", "tools/call", "nope", `{"name":"nope",` + v + `}`, both, false, 400, "application/json", "",
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"unknown tool \"nope\""}}`},
		{"a stream preferred, an error with a status", "tools/call", "nope", `{"name":"nope",` + v + `}`, "text/event-stream, application/json",
			false, 400, "application/json", "", `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"unknown tool \"nope\""}}`},
		{"Accept without a stream", "tools/list", "", `{` + v + `}`, "application/json", false, 400, "application/json", "",
			`{"error":{"code":-32600,"message":"Accept must contain both 'application/json' and 'text/event-stream'"},"id":5,"jsonrpc":"2.0"}`},
		{"a call without Mcp-Name", "tools/call", "", call, both, false, 400, "application/json", "",
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32020,"message":"missing required Mcp-Name header for method \"tools/call\""}}`},
		{"overloaded", "tools/call", "greet", call, both, true, 503, "application/json", "2", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.hold {
				held, err := ctl.Admit(auth.Anonymous().Tenant, admission.NeedStart)
				if err != nil {
					t.Fatal(err)
				}
				defer held.Done()
			}
			w := serveHTTP(d, tt.method, tt.mcpName, tt.params, tt.accept)
			if w.Code != tt.status || w.Header().Get("Content-Type") != tt.contentType || w.Header().Get("Retry-After") != tt.retryAfter {
				t.Fatalf("answer = %d %s, Retry-After %q; want %d %s, %q\n%s", w.Code, w.Header().Get("Content-Type"),
					w.Header().Get("Retry-After"), tt.status, tt.contentType, tt.retryAfter, w.Body)
			}
			switch {
			case tt.hold:
				var r struct{ Error *jsonrpc.Error }
				if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil || r.Error == nil || r.Error.Code != jsonrpc.CodeInternalError {
					t.Fatalf("overload = %s, want the -32603 overload", w.Body)
				}
				assertJSON(t, string(r.Error.Data), `{"reason":"tenant","retryAfter":2}`)
			case strings.HasPrefix(tt.want, "event:"):
				if w.Body.String() != tt.want {
					t.Fatalf("stream = %q, want %q", w.Body, tt.want)
				}
			default:
				assertJSON(t, w.Body.String(), tt.want)
			}
		})
	}
}
