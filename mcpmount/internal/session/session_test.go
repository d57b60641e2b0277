package session

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap/zaptest"

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

// The session dialect's encodings, on a message stream (ServeStdio) served
// by a real core over the fake run service: the 2025-11-25 task dialect
// (params.task, its nested and flat Task, its errors) and the results of a
// session-dialect call.

var (
	created = time.Date(2025, 11, 25, 8, 0, 0, 0, time.UTC)
	updated = created.Add(3 * time.Second)
)

// stdioClient is a client of ServeStdio: one JSON-RPC message a line.
type stdioClient struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Scanner
	id  int
}

// newStdioSession serves a session over a core on f and returns its
// client, initialized as a 2025-11-25 client that declared
// capabilities.tasks, with the initialize result.
func newStdioSession(t *testing.T, f *runstest.Fake) (*stdioClient, map[string]any) {
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
		s.Status, s.StatusMessage, s.UpdatedAt = signals.StatusCancelled, signals.StatusCancelled.Message(), updated
	})
	states, err := requeststate.NewCodec(make([]byte, 32), time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	pacer := core.NewPacer(500 * time.Millisecond)
	log := zaptest.NewLogger(t)
	c, err := core.New(core.Options{Runs: f, Catalog: cat, Log: log, States: states, Pacer: pacer,
		MaxRounds: 3, MaxWait: 5 * time.Second, KeepAlive: time.Second, NoCompanions: true, NoRunList: true})
	if err != nil {
		t.Fatal(err)
	}
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	caps.AddExtension(core.ExtensionTasks, map[string]any{})
	d, err := New(Options{Parts: wire.Parts{Core: c, Projector: wire.Projector{Pacer: pacer}, Log: log, Capabilities: caps,
		Implementation: &mcp.Implementation{Name: "test-mount", Version: "1.2.3"}, KeepAlive: time.Second},
		Authenticate: auth.AnonymousAuthenticator})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- d.ServeStdio(context.Background(), auth.Anonymous(), inR, outW, Divert{}) }()
	t.Cleanup(func() {
		_ = inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }() // drain what is left
		if err := <-done; err != nil {
			t.Errorf("ServeStdio = %v", err)
		}
	})
	cl := &stdioClient{t: t, in: inW, out: bufio.NewScanner(outR)}
	cl.out.Buffer(make([]byte, 1<<20), 1<<20)
	init := cl.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"c","version":"0"}}`)
	cl.write(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return cl, init
}

func (c *stdioClient) write(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// call sends a request and returns its response (a map of its members),
// skipping notifications.
func (c *stdioClient) call(method, params string) map[string]any {
	c.t.Helper()
	c.id++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": json.RawMessage(params)})
	c.write(string(req))
	for c.out.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(c.out.Bytes(), &msg); err != nil {
			c.t.Fatalf("decode %s: %v", c.out.Bytes(), err)
		}
		if id, ok := msg["id"].(float64); ok && int(id) == c.id {
			return msg
		}
	}
	c.t.Fatalf("no answer to %s: %v", method, c.out.Err())
	return nil
}

// assertJSON fails unless got, encoded, is the JSON value want.
func assertJSON(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("decode %s: %v", want, err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("JSON = %s\nwant   %s", gb, wb)
	}
}

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

// sessionTaskJSON is the dialect's Task of a run of these tests.
func sessionTaskJSON(taskID, status, message string, poll int) string {
	b, _ := json.Marshal(map[string]any{"taskId": taskID, "status": status, "statusMessage": message,
		"createdAt": "2025-11-25T08:00:00Z", "lastUpdatedAt": "2025-11-25T08:00:03Z", "ttl": nil, "pollInterval": poll})
	return string(b)
}

// TestInitializeDeclaresTaskDialect: a 2025-11-25 initialize result
// declares the dialect's capabilities.tasks and not the Tasks extension.
func TestInitializeDeclaresTaskDialect(t *testing.T) {
	_, init := newStdioSession(t, runstest.New())
	result, _ := init["result"].(map[string]any)
	caps, _ := result["capabilities"].(map[string]any)
	if result["protocolVersion"] != "2025-11-25" || caps == nil {
		t.Fatalf("initialize = %v, want a 2025-11-25 result", init)
	}
	assertJSON(t, caps["tasks"], `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)
	if _, ok := caps["extensions"]; ok {
		t.Fatalf("capabilities = %v, want no extensions", caps)
	}
}

// TestTaskDialectEncoding: the 2025-11-25 task dialect's answers, exact:
// the nested Task of a task-augmented call, the flat Task of tasks/get
// (an isError result is failed) and tasks/cancel, tasks/result's payload
// tied to its task, tasks/list, and the errors of calls the dialect
// refuses.
func TestTaskDialectEncoding(t *testing.T) {
	f := runstest.New()
	cl, _ := newStdioSession(t, f)
	running := signals.StatusRunning.Message()

	answer := cl.call("tools/call", `{"name":"slow","arguments":{},"task":{"ttl":60000}}`)
	taskID := runid.Project(f.LastID())
	assertJSON(t, answer, `{"jsonrpc":"2.0","id":2,"result":{"task":`+sessionTaskJSON(taskID, "working", running, 500)+`}}`)

	// The ended runs are of another tool: each ended run read teaches the
	// pacer its tool's pace (3 s: a 300 ms poll), and slow's stays 500 ms
	// until its own run ends.
	toolError := addRun(t, f, signals.StatusFailed, func(s *signals.Snapshot) {
		s.Tool, s.Error = "other", &signals.RunError{Message: "no"}
	})
	done := addRun(t, f, signals.StatusCompleted, func(s *signals.Snapshot) {
		s.Tool, s.Result = "other", &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: "yes"}}}
	})
	f.SetListPage(runs.ListPage{Runs: []signals.Snapshot{{RunID: f.LastID(), Tool: "slow", Status: signals.StatusRunning,
		StatusMessage: running, CreatedAt: created, UpdatedAt: updated}}, NextCursor: "next"})
	tests := []struct {
		name, method, params, want string
	}{
		{"tasks/get", "tasks/get", `{"taskId":"` + taskID + `"}`,
			`{"result":` + sessionTaskJSON(taskID, "working", running, 500) + `}`},
		{"tasks/get of a tool error is failed", "tasks/get", `{"taskId":"` + toolError + `"}`,
			`{"result":` + sessionTaskJSON(toolError, "failed", signals.StatusFailed.Message(), 300) + `}`},
		{"tasks/get of an unknown task", "tasks/get", `{"taskId":"nope"}`,
			`{"error":{"code":-32602,"message":"task not found"}}`},
		{"tasks/result", "tasks/result", `{"taskId":"` + done + `"}`,
			`{"result":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + done + `"}},"content":[{"type":"text","text":"yes"}],"isError":false}}`},
		{"tasks/list", "tasks/list", `{}`,
			`{"result":{"tasks":[` + sessionTaskJSON(taskID, "working", running, 500) + `],"nextCursor":"next"}}`},
		{"tasks/cancel", "tasks/cancel", `{"taskId":"` + taskID + `"}`,
			`{"result":` + sessionTaskJSON(taskID, "cancelled", signals.StatusCancelled.Message(), 300) + `}`},
		{"tasks/cancel of an ended task", "tasks/cancel", `{"taskId":"` + done + `"}`,
			`{"error":{"code":-32602,"message":"task ` + done + ` is already completed; a terminal task cannot be cancelled"}}`},
		{"a session-dialect call's result has no resultType", "tools/call", `{"name":"greet","arguments":{"name":"Ada"}}`,
			`{"result":{"content":[{"type":"text","text":"Hello, Ada!"}],"isError":false}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cl.call(tt.method, tt.params)
			delete(got, "jsonrpc")
			delete(got, "id")
			assertJSON(t, got, tt.want)
		})
	}
	if reason, _ := f.CancelReason(f.LastID()); reason != "" {
		t.Fatalf("the listed run was cancelled (%s)", reason)
	}
	if reason, _ := f.CancelReason(mustParse(t, taskID)); reason != signals.ReasonCallerRequested {
		t.Fatalf("cancel reason = %q, want %q", reason, signals.ReasonCallerRequested)
	}
}

func mustParse(t *testing.T, taskID string) string {
	t.Helper()
	id, err := runid.Parse(taskID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestTaskOfToolThatForbidsTasks: a 2025-11-25 task asked of a tool that
// forbids tasks is refused with -32601 and starts no run. (The go-sdk
// v1.8.0 rewrites the message of every -32601 a handler returns to
// "method not found: <method>", so the dialect's own message, which names
// params.task, does not reach the client; only the code is asserted.)
func TestTaskOfToolThatForbidsTasks(t *testing.T) {
	f := runstest.New()
	cl, _ := newStdioSession(t, f)
	got := cl.call("tools/call", `{"name":"greet","arguments":{"name":"Ada"},"task":{}}`)
	e, _ := got["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32601) {
		t.Fatalf("answer = %v, want -32601", got)
	}
	if n := f.StartCount(); n != 0 {
		t.Fatalf("%d runs started", n)
	}
}
