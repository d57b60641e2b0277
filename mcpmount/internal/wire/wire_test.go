package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/signals"
)

// TestEncodeResponse: a response is written jsonrpc, id, result or error,
// nothing HTML-escaped, the id as the SDK echoes it; an error that is no
// JSON-RPC error is the internal error; the HTTP status is SEP-2575's for
// the error's code.
func TestEncodeResponse(t *testing.T) {
	tests := []struct {
		name   string
		id     string
		res    mcp.Result
		err    error
		want   string
		status int
	}{
		{"a result", `7`, &AckResult{ResultType: ResultComplete}, nil,
			`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}`, 0},
		{"an id with spaces and escapes is canonical", ` "\u0061<b>" `, &AckResult{ResultType: ResultComplete}, nil,
			`{"jsonrpc":"2.0","id":"a<b>","result":{"resultType":"complete"}}`, 0},
		{"an integer id is canonical", `007`, &AckResult{ResultType: ResultComplete}, nil,
			`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}`, 0},
		{"-32602 is 400", `"x"`, nil, core.InvalidParams("bad <thing> & more"),
			`{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"bad <thing> & more"}}`, http.StatusBadRequest},
		{"-32601 is 404", `1`, nil, ErrMethodNotFound("nope/nope"),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: \"nope/nope\""}}`, http.StatusNotFound},
		{"-32021 is 400 with its data", `1`, nil, core.TasksExtensionRequired("tasks/get"),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"tasks/get requires the client capability extensions[\"io.modelcontextprotocol/tasks\"]",` +
				`"data":{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`, http.StatusBadRequest},
		{"-32603 is 200", `1`, nil, core.Internal(),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error"}}`, 0},
		{"another error is the internal error", `1`, nil, errors.New("disk on fire"),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error"}}`, 0},
		{"a wrapped JSON-RPC error is itself", `1`, nil, fmt.Errorf("wrapped: %w", core.TaskNotFound()),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"task not found"}}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, status := EncodeResponse(json.RawMessage(tt.id), tt.res, tt.err)
			if string(body) != tt.want || status != tt.status {
				t.Fatalf("EncodeResponse = %s, %d\nwant            %s, %d", body, status, tt.want, tt.status)
			}
		})
	}
}

// TestWriteRefusal: a refusal is written error, id, jsonrpc with its
// status, a null id when it has none, and its length ahead; an overload
// adds Retry-After and the overload data.
func TestWriteRefusal(t *testing.T) {
	rej := &admission.Rejection{Tenant: "acme", Reason: admission.ReasonWaiting, Limit: 2, RetryAfter: 1500 * time.Millisecond}
	tests := []struct {
		name   string
		write  func(w http.ResponseWriter)
		status int
		want   string
		retry  string
	}{
		{"no id", func(w http.ResponseWriter) {
			WriteRefusal(w, Refusal{Status: http.StatusBadRequest, Code: CodeParseError, Message: "parse error"})
		}, http.StatusBadRequest, `{"error":{"code":-32700,"message":"parse error"},"id":null,"jsonrpc":"2.0"}`, ""},
		{"an id and data", func(w http.ResponseWriter) {
			WriteRefusal(w, Refusal{Status: http.StatusBadRequest, ID: json.RawMessage(`"r1"`), Code: CodeInvalidParams,
				Message: "m", Data: map[string]string{"k": "v"}})
		}, http.StatusBadRequest, `{"error":{"code":-32602,"data":{"k":"v"},"message":"m"},"id":"r1","jsonrpc":"2.0"}`, ""},
		{"overloaded", func(w http.ResponseWriter) {
			WriteOverloaded(w, json.RawMessage(`4`), rej, http.StatusServiceUnavailable)
		}, http.StatusServiceUnavailable,
			`{"error":{"code":-32603,"data":{"reason":"waiting","retryAfter":2},"message":` + mustJSON(t, rej.Error()) + `},"id":4,"jsonrpc":"2.0"}`, "2"},
		{"header mismatch", func(w http.ResponseWriter) {
			WriteHeaderMismatch(w, json.RawMessage(`"a"`), "Mcp-Method does not match the body")
		}, http.StatusBadRequest, `{"jsonrpc":"2.0","id":"a","error":{"code":-32020,"message":"Mcp-Method does not match the body"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			tt.write(w)
			body := w.Body.String()
			if w.Code != tt.status || body != tt.want {
				t.Fatalf("wrote %d %s\nwant  %d %s", w.Code, body, tt.status, tt.want)
			}
			h := w.Header()
			if h.Get("Content-Type") != "application/json" || h.Get("Content-Length") != fmt.Sprint(len(body)) || h.Get("Retry-After") != tt.retry {
				t.Fatalf("headers = %v, want application/json of %d bytes, Retry-After %q", h, len(body), tt.retry)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCheckEnvelope: a message must be JSON-RPC 2.0 with a method, and an
// id (when present) a string or an integer; an id that cannot be echoed is
// answered with a null id.
func TestCheckEnvelope(t *testing.T) {
	envelope := `invalid request: want a JSON-RPC 2.0 request or notification with a method`
	tests := []struct {
		name    string
		msg     Message
		refused bool
		id      string
		message string
	}{
		{"a request", Message{JSONRPC: "2.0", ID: json.RawMessage(`1`), Method: "tools/list"}, false, "", ""},
		{"a notification", Message{JSONRPC: "2.0", Method: "notifications/initialized"}, false, "", ""},
		{"a string id", Message{JSONRPC: "2.0", ID: json.RawMessage(`"a"`), Method: "ping"}, false, "", ""},
		{"version 1.0", Message{JSONRPC: "1.0", ID: json.RawMessage(`1`), Method: "ping"}, true, `1`, envelope},
		{"no method", Message{JSONRPC: "2.0", ID: json.RawMessage(`"q"`)}, true, `"q"`, envelope},
		{"a null id", Message{JSONRPC: "2.0", ID: json.RawMessage(`null`), Method: "ping"}, true, ``, envelope},
		{"no method and an id not to echo", Message{JSONRPC: "2.0", ID: json.RawMessage(`{}`)}, true, ``, envelope},
		{"a fractional id", Message{JSONRPC: "2.0", ID: json.RawMessage(`1.5`), Method: "ping"}, true, ``,
			"invalid request: the id 1.5 is not a string or an integer"},
		{"a long id is cut", Message{JSONRPC: "2.0", ID: json.RawMessage(`[` + strings.Repeat("1,", 30) + `1]`), Method: "ping"}, true, ``,
			"invalid request: the id [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,... is not a string or an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, refused := CheckEnvelope(&tt.msg)
			if refused != tt.refused {
				t.Fatalf("refused = %t, want %t (%+v)", refused, tt.refused, r)
			}
			if !refused {
				return
			}
			if r.Status != http.StatusBadRequest || r.Code != CodeInvalidRequest || string(r.ID) != tt.id || r.Message != tt.message {
				t.Fatalf("refusal = %d %d id %s %q, want 400 -32600 id %s %q", r.Status, r.Code, r.ID, r.Message, tt.id, tt.message)
			}
		})
	}
}

// TestCheckNumbers: a number a 64-bit float cannot hold in params is
// -32602 naming where it is; the arguments a tools/call set aside are not
// looked at again.
func TestCheckNumbers(t *testing.T) {
	tests := []struct {
		name    string
		params  string
		in      Incoming
		refused bool
	}{
		{"ordinary numbers", `{"a":[1,2.5,-3e10]}`, Incoming{}, false},
		{"out of range", `{"a":{"b":[0,1e309]}}`, Incoming{}, true},
		{"set-aside arguments", `{"name":"t","arguments":{"n":1e309}}`,
			Incoming{Params: map[string]json.RawMessage{"name": json.RawMessage(`"t"`)}, ArgumentsProblem: errors.New("n: out of range")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := &Message{JSONRPC: "2.0", ID: json.RawMessage(`9`), Method: "tools/call", Params: json.RawMessage(tt.params)}
			r, refused := CheckNumbers(msg, &tt.in)
			if refused != tt.refused {
				t.Fatalf("refused = %t (%+v), want %t", refused, r, tt.refused)
			}
			if refused && (r.Status != http.StatusBadRequest || r.Code != CodeInvalidParams || string(r.ID) != `9` ||
				!strings.HasPrefix(r.Message, "invalid params: ") || !strings.Contains(r.Message, "params.a.b[1]")) {
				t.Fatalf("refusal = %+v, want 400 -32602 naming params.a.b[1]", r)
			}
		})
	}
}

// TestNestingAndIDs: nesting depth skips strings; ids are strings or
// 64-bit integers.
func TestNestingAndIDs(t *testing.T) {
	depths := map[string]int{
		`1`: 0, `{}`: 1, `{"a":[{"b":[]}]}`: 4, `{"a":"[[[{{{"}`: 1, `["\"[", [[]]]`: 3, `[{}, {}, []]`: 2,
	}
	for in, want := range depths {
		if got := NestingDepth([]byte(in)); got != want {
			t.Errorf("NestingDepth(%s) = %d, want %d", in, got, want)
		}
	}
	ids := map[string]bool{
		`1`: true, `-9223372036854775808`: true, `9223372036854775808`: false, `"x"`: true, ` "x" `: true,
		`1.0`: false, `true`: false, `null`: false, ``: false, `"unterminated`: false, `[1]`: false,
	}
	for in, want := range ids {
		if got := ValidID(json.RawMessage(in)); got != want {
			t.Errorf("ValidID(%s) = %t, want %t", in, got, want)
		}
	}
}

// TestDecodeParams: params split into their fields and _meta's; params or
// a _meta that is no object is an error.
func TestDecodeParams(t *testing.T) {
	tests := []struct {
		raw     string
		params  int
		meta    int
		problem string
	}{
		{``, 0, 0, ""},
		{`null`, 0, 0, ""},
		{`{"a":1,"_meta":{"x":1,"y":2}}`, 2, 2, ""},
		{`{"a":1}`, 1, 0, ""},
		{`[1]`, 0, 0, "params must be an object"},
		{`{"_meta":[]}`, 1, 0, "params._meta must be an object"},
	}
	for _, tt := range tests {
		params, meta, err := DecodeParams(json.RawMessage(tt.raw))
		if len(params) != tt.params || len(meta) != tt.meta || fmt.Sprint(err) != map[bool]string{true: "<nil>", false: tt.problem}[tt.problem == ""] {
			t.Errorf("DecodeParams(%s) = %d fields, %d meta, %v; want %d, %d, %q", tt.raw, len(params), len(meta), err, tt.params, tt.meta, tt.problem)
		}
	}
}

// TestNegotiate: what an Accept header allows and prefers.
func TestNegotiate(t *testing.T) {
	tests := []struct {
		accept []string
		want   Negotiation
	}{
		{nil, Negotiation{}},
		{[]string{"application/json, text/event-stream"}, Negotiation{JSONOK: true, StreamOK: true, ListsSSE: true}},
		{[]string{"text/event-stream, application/json"}, Negotiation{JSONOK: true, StreamOK: true, PrefersSSE: true, ListsSSE: true}},
		{[]string{"application/json", "text/event-stream;q=0.5"}, Negotiation{JSONOK: true, StreamOK: true, ListsSSE: true}},
		{[]string{"*/*"}, Negotiation{JSONOK: true, StreamOK: true}},
		{[]string{"text/*"}, Negotiation{StreamOK: true}},
		{[]string{"Application/JSON"}, Negotiation{JSONOK: true}},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		for _, v := range tt.accept {
			r.Header.Add("Accept", v)
		}
		if got := Negotiate(r); got != tt.want {
			t.Errorf("Negotiate(%q) = %+v, want %+v", tt.accept, got, tt.want)
		}
	}
}

// TestEventStream: an event stream opens with the SSE headers once,
// writes each message as one event, keeps alive with comment lines, and
// writes nothing of its own once stopped.
func TestEventStream(t *testing.T) {
	w := httptest.NewRecorder()
	s := NewEventStream(w)
	s.KeepAlive(5 * time.Millisecond)
	s.WriteHeader(http.StatusTeapot) // ignored: the stream is open
	s.Event([]byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`))
	time.Sleep(30 * time.Millisecond)
	s.Stop()
	s.Stop()
	body := w.Body.String()
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" || w.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("stream opened %d %v, want 200 text/event-stream", w.Code, w.Header())
	}
	event := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"
	rest := strings.ReplaceAll(strings.Replace(body, event, "", 1), ": keep-alive\n\n", "")
	if !strings.Contains(body, event) || !strings.Contains(body, ": keep-alive\n\n") || rest != "" {
		t.Fatalf("stream = %q, want the event and keep-alive comments only", body)
	}
	n := len(w.Body.String())
	time.Sleep(20 * time.Millisecond)
	if len(w.Body.String()) != n {
		t.Fatal("a keep-alive was written after Stop")
	}
}

// projected is v encoded, as a client receives it.
func projected(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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
	if gb, wb := mustJSON(t, g), mustJSON(t, w); gb != wb {
		t.Fatalf("JSON = %s\nwant   %s", gb, wb)
	}
}

// taskSnap is a run of tool "t" created and updated at fixed times.
func taskSnap(status signals.Status, mutate ...func(*signals.Snapshot)) signals.Snapshot {
	created := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	s := signals.Snapshot{RunID: "acme/r0123456789abcdef", Tool: "t", Status: status, StatusMessage: "msg",
		CreatedAt: created, UpdatedAt: created.Add(1500 * time.Millisecond)}
	for _, m := range mutate {
		m(&s)
	}
	return s
}

// TestTaskShapes: the Tasks extension's shapes of a run, exact: the
// CreateTaskResult of a call, the DetailedTask of tasks/get in each
// status (input requests, inlined result, error), the ack.
func TestTaskShapes(t *testing.T) {
	caller := signals.Subject{Tenant: "acme", SubjectID: "ada"}
	ask := func(s *signals.Snapshot) {
		s.Interrupts = []signals.Interrupt{{ID: "acme/r0123456789abcdef-i1", Kind: signals.KindClarification, Title: "Name?",
			Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`), Approvers: []string{"bob"}}}
	}
	result := func(s *signals.Snapshot) {
		s.Result = &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: "hi"}}, StructuredContent: json.RawMessage(`{"n":1}`)}
	}
	rpcFail := func(s *signals.Snapshot) { s.Error = &signals.RunError{Message: "bad order", RPCCode: -32602} }
	task := func(status, poll string) string {
		return `"taskId":"acme~2Fr0123456789abcdef","status":"` + status + `","statusMessage":"msg",` +
			`"createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:01.5Z","ttlMs":null,"pollIntervalMs":` + poll
	}
	created := func(s signals.Snapshot) func(Projector) any {
		return func(p Projector) any { return p.CreateTask(s) }
	}
	detailed := func(s signals.Snapshot) func(Projector) any {
		return func(p Projector) any { return p.DetailedTask(s, caller) }
	}
	tests := []struct {
		name string
		got  func(p Projector) any
		want string
	}{
		{"created", created(taskSnap(signals.StatusRunning)), `{"resultType":"task",` + task("working", "500") + `}`},
		{"created waiting for input", created(taskSnap(signals.StatusWaitingInput, ask)), `{"resultType":"task",` + task("input_required", "2000") + `}`},
		{"working", detailed(taskSnap(signals.StatusRunning)), `{"resultType":"complete",` + task("working", "500") + `}`},
		{"input required", detailed(taskSnap(signals.StatusWaitingInput, ask)), `{"resultType":"complete",` + task("input_required", "2000") +
			`,"inputRequests":{"acme/r0123456789abcdef-i1":{"method":"elicitation/create","params":{"mode":"form","message":"Name?",` +
			`"requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}},` +
			`"_meta":{"io.openwop/answerers":{"approvers":["bob"],"callerMay":false}}}}}}`},
		{"completed", detailed(taskSnap(signals.StatusCompleted, result)), `{"resultType":"complete",` + task("completed", "150") +
			`,"result":{"resultType":"complete","content":[{"type":"text","text":"hi"}],"isError":false,"structuredContent":{"n":1}}}`},
		{"failed as a tool", detailed(taskSnap(signals.StatusFailed)), `{"resultType":"complete",` + task("completed", "150") +
			`,"result":{"resultType":"complete","content":[{"type":"text","text":"the run failed"}],"isError":true}}`},
		{"failed with a JSON-RPC error", detailed(taskSnap(signals.StatusFailed, rpcFail)), `{"resultType":"complete",` + task("failed", "150") +
			`,"error":{"code":-32602,"message":"bad order"}}`},
		{"cancelled", detailed(taskSnap(signals.StatusCancelled)), `{"resultType":"complete",` + task("cancelled", "150") + `}`},
		{"ack", func(Projector) any { a, _ := Ack(nil); return a }, `{"resultType":"complete"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A fresh pacer: an ended run projected teaches it its tool's pace.
			p := Projector{Pacer: core.NewPacer(500 * time.Millisecond)}
			assertJSON(t, projected(t, tt.got(p)), tt.want)
		})
	}
	if a, err := Ack(core.TaskNotFound()); a != nil || err == nil {
		t.Fatalf("Ack of an error = %v, %v; want the error", a, err)
	}
}

// TestAnswerCall: the core's answer to a tools/call in the shapes of
// 2026-07-28 (labelled) and of a session-dialect request that declared the
// Tasks extension (not labelled).
func TestAnswerCall(t *testing.T) {
	text := func(s string) *core.ToolResult {
		return &core.ToolResult{ToolResult: signals.ToolResult{Content: []signals.Content{{Type: "text", Text: s}}}}
	}
	done := func(s *signals.Snapshot) {
		s.Result = &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: "done"}}}
	}
	rpcFail := func(s *signals.Snapshot) { s.Error = &signals.RunError{Message: "bad order", RPCCode: -32602} }
	tests := []struct {
		name     string
		res      mcp.Result
		err      error
		labelled bool
		want     string
		code     int64
		message  string
	}{
		{"a tool result, labelled", text("hi"), nil, true, `{"resultType":"complete","content":[{"type":"text","text":"hi"}],"isError":false}`, 0, ""},
		{"a tool result, not labelled", text("hi"), nil, false, `{"content":[{"type":"text","text":"hi"}],"isError":false}`, 0, ""},
		{"input required", &core.InputRequired{InputRequests: map[string]core.ElicitRequest{}, RequestState: "s"}, nil, true,
			`{"resultType":"input_required","inputRequests":{},"requestState":"s"}`, 0, ""},
		{"a task still working", &core.TaskCreated{Snap: taskSnap(signals.StatusRunning)}, nil, true,
			`{"resultType":"task","taskId":"acme~2Fr0123456789abcdef","status":"working","statusMessage":"msg",` +
				`"createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:01.5Z","ttlMs":null,"pollIntervalMs":500}`, 0, ""},
		{"a task whose run ended is its result", &core.TaskCreated{Snap: taskSnap(signals.StatusCompleted, done)}, nil, true,
			`{"resultType":"complete","content":[{"type":"text","text":"done"}],"isError":false}`, 0, ""},
		{"a task failed with a JSON-RPC error stays a task", &core.TaskCreated{Snap: taskSnap(signals.StatusFailed, rpcFail)}, nil, true,
			`{"resultType":"task","taskId":"acme~2Fr0123456789abcdef","status":"failed","statusMessage":"msg",` +
				`"createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:01.5Z","ttlMs":null,"pollIntervalMs":150}`, 0, ""},
		{"a task-only tool refuses a caller without the extension", nil, &core.TaskRefusal{Tool: "job"}, true, "",
			mcp.CodeMissingRequiredClientCapabilities, `tool "job" runs only as a task; it requires the client capability extensions["io.modelcontextprotocol/tasks"]`},
		{"a task of a tool that forbids them is the core's refusal", nil, &core.TaskRefusal{Tool: "greet", Forbidden: true}, true, "", -1, ""},
		{"an error passes", nil, core.TaskNotFound(), true, "", jsonrpc.CodeInvalidParams, "task not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Projector{Pacer: core.NewPacer(500 * time.Millisecond)}
			res, err := p.AnswerCall(tt.res, tt.err, tt.labelled)
			switch {
			case tt.code == -1:
				if refusal := (*core.TaskRefusal)(nil); !errors.As(err, &refusal) || res != nil {
					t.Fatalf("AnswerCall = %v, %v; want the TaskRefusal", res, err)
				}
			case tt.code != 0:
				var rpc *jsonrpc.Error
				if !errors.As(err, &rpc) || rpc.Code != tt.code || rpc.Message != tt.message || res != nil {
					t.Fatalf("AnswerCall = %v, %v; want %d %q", res, err, tt.code, tt.message)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				assertJSON(t, projected(t, res), tt.want)
			}
		})
	}
}
