package mcpmount

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// sessionlessClient sends session-dialect requests without a session (the SDK
// serves them statelessly): no _meta triple, MCP-Protocol-Version naming
// the session-dialect revision.
type sessionlessClient struct {
	t       *testing.T
	url     string
	key     string
	version string
	id      int
}

func (c *sessionlessClient) call(method string, params map[string]any) rpc {
	c.t.Helper()
	c.id++
	msg := map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	body, _ := json.Marshal(msg)
	h := map[string]string{"Content-Type": "application/json", "Accept": acceptJSON, "MCP-Protocol-Version": c.version}
	if c.key != "" {
		h["Authorization"] = "Bearer " + c.key
	}
	return post(c.t, c.url, h, body)
}

// createTask calls tool with params.task and returns the created task.
func (c *sessionlessClient) createTask(tool string, args map[string]any) map[string]any {
	c.t.Helper()
	res := wantResult(c.t, c.call("tools/call", map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": 60000}}))
	tk, ok := res["task"].(map[string]any)
	if !ok || tk["taskId"] == nil {
		c.t.Fatalf("tools/call with params.task = %v, want a CreateTaskResult", res)
	}
	return tk
}

// wantSessionTask fails unless m has the dialect's Task fields.
func wantSessionTask(t *testing.T, m map[string]any) {
	t.Helper()
	for _, k := range []string{"taskId", "status", "createdAt", "lastUpdatedAt", "ttl"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("task %v lacks %q", m, k)
		}
	}
	for _, k := range []string{"resultType", "ttlMs", "pollIntervalMs", "result", "inputRequests"} {
		if _, ok := m[k]; ok {
			t.Fatalf("task %v has the Tasks extension's %q", m, k)
		}
	}
	if m["ttl"] != nil {
		t.Fatalf("ttl = %v, want null (unlimited)", m["ttl"])
	}
	if p, _ := m["pollInterval"].(float64); p <= 0 {
		t.Fatalf("pollInterval = %v", m["pollInterval"])
	}
}

func relatedTask(res map[string]any) any {
	meta, _ := res["_meta"].(map[string]any)
	rt, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any)
	return rt["taskId"]
}

// TestDialectInitialize checks the capabilities of the session dialect's
// initialize results: the 2025-11-25 tasks object exactly, never the Tasks
// extension; and each tool's execution.taskSupport in tools/list.
func TestDialectInitialize(t *testing.T) {
	s := newTestServer(t, nil)
	c := &sessionlessClient{t: t, url: s.URL}
	init := func(version string) map[string]any {
		res := wantResult(t, c.call("initialize", map[string]any{"protocolVersion": version,
			"capabilities": map[string]any{"elicitation": map[string]any{}}, "clientInfo": map[string]any{"name": "t", "version": "0"}}))
		if res["protocolVersion"] != version {
			t.Fatalf("negotiated %v, want %s", res["protocolVersion"], version)
		}
		return res["capabilities"].(map[string]any)
	}
	caps := init("2025-11-25")
	want := map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
		"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
	if !reflect.DeepEqual(caps["tasks"], want) {
		t.Fatalf("2025-11-25 capabilities.tasks = %v, want %v", caps["tasks"], want)
	}
	if _, ok := caps["extensions"]; ok || caps["tools"] == nil {
		t.Fatalf("2025-11-25 capabilities = %v", caps)
	}
	caps = init("2025-06-18")
	if _, ok := caps["tasks"]; ok {
		t.Fatalf("2025-06-18 capabilities = %v, want no tasks", caps)
	}

	support := func(version string) map[string]any {
		c.version = version
		out := map[string]any{}
		for _, tl := range wantResult(t, c.call("tools/list", nil))["tools"].([]any) {
			d := tl.(map[string]any)
			ex, _ := d["execution"].(map[string]any)
			out[d["name"].(string)] = ex["taskSupport"]
		}
		return out
	}
	got := support("2025-11-25")
	if got["slow"] != "optional" || got["greet"] != "forbidden" || got["required_job"] != "required" {
		t.Fatalf("2025-11-25 taskSupport = %v", got)
	}
	if got := support("2025-06-18"); got["slow"] != nil {
		t.Fatalf("2025-06-18 tools carry execution: %v", got)
	}
}

// TestDialectListPages checks that tasks/list hands out and takes back the
// run service's cursors.
func TestDialectListPages(t *testing.T) {
	s := newTestServer(t, nil)
	c := &sessionlessClient{t: t, url: s.URL, version: "2025-11-25"}
	s.runs.SetListPage(runs.ListPage{Runs: []signals.Snapshot{{RunID: "anonymous/AAAAAAAAAAAAAAAAAAAAAAAA",
		Status: signals.StatusWaitingApproval, LastSequence: -1}}, NextCursor: "next-page"})
	res := wantResult(t, c.call("tasks/list", map[string]any{"cursor": "this-page"}))
	if res["nextCursor"] != "next-page" {
		t.Fatalf("tasks/list = %v", res)
	}
	tasks := res["tasks"].([]any)
	if len(tasks) != 1 || tasks[0].(map[string]any)["status"] != "input_required" {
		t.Fatalf("tasks = %v", tasks)
	}
	wantSessionTask(t, tasks[0].(map[string]any))
	if l := s.runs.Lists(); len(l) != 1 || l[0].Cursor != "this-page" {
		t.Fatalf("list requests = %+v", l)
	}
}

// TestDialectWire drives the 2025-11-25 task dialect over HTTP against the
// real stack: create with params.task, tasks/get, tasks/result, tasks/list,
// tasks/cancel, tenant isolation and method errors.
func TestDialectWire(t *testing.T) {
	var p *probe
	s := newStackWith(t, keysFor(t, "ka=acme:alice,kb=globex:bob"), "", withProbe(&p, nil))
	alice := &sessionlessClient{t: t, url: s.URL + "/mcp", key: "ka", version: "2025-11-25"}
	bob := &sessionlessClient{t: t, url: s.URL + "/mcp", key: "kb", version: "2025-11-25"}
	aliceSubject := signals.Subject{Tenant: "acme", SubjectID: "alice"}

	t.Run("lifecycle", func(t *testing.T) {
		alice.t = t
		created := alice.createTask("slow_compute", map[string]any{"seconds": 1, "label": "dialect"})
		wantSessionTask(t, created)
		id := created["taskId"].(string)
		if created["status"] != "working" {
			t.Fatalf("created = %v", created)
		}
		got := wantResult(t, alice.call("tasks/get", map[string]any{"taskId": id, "task": map[string]any{}}))
		wantSessionTask(t, got)
		if got["taskId"] != id {
			t.Fatalf("tasks/get = %v", got)
		}
		res := wantResult(t, alice.call("tasks/result", map[string]any{"taskId": id}))
		if !strings.Contains(text(t, res), `"dialect"`) || res["isError"] != false || relatedTask(res) != id {
			t.Fatalf("tasks/result = %v", res)
		}
		if got := wantResult(t, alice.call("tasks/get", map[string]any{"taskId": id})); got["status"] != "completed" {
			t.Fatalf("after tasks/result: %v", got)
		}
	})

	t.Run("tasks/result owns the run", func(t *testing.T) {
		// The client leaves while tasks/result waits: the run is
		// cancelled, as for any request that continues a run.
		alice.t = t
		id := alice.createTask("slow_compute", map[string]any{"seconds": 60})["taskId"].(string)
		p.mu.Lock()
		p.holdAwaits = 1
		p.mu.Unlock()
		conn, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/result","params":{"taskId":%q}}`, id)
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: %s\r\n"+
			"MCP-Protocol-Version: 2025-11-25\r\nAuthorization: Bearer ka\r\nContent-Length: %d\r\n\r\n%s",
			s.addr(), acceptJSON, len(body), body)
		if held := p.nextHeld(t); held != runOf(t, id) {
			t.Fatalf("held %s, want %s", held, runOf(t, id))
		}
		conn.Close()
		wantCancelledByRequest(t, s.awaitEnd(t, aliceSubject, runOf(t, id), 20*time.Second))
	})

	t.Run("tool error is failed", func(t *testing.T) {
		alice.t = t
		id := alice.createTask("failing_job", map[string]any{})["taskId"].(string)
		res := wantResult(t, alice.call("tasks/result", map[string]any{"taskId": id}))
		if res["isError"] != true || relatedTask(res) != id {
			t.Fatalf("tasks/result = %v", res)
		}
		if got := wantResult(t, alice.call("tasks/get", map[string]any{"taskId": id})); got["status"] != "failed" {
			t.Fatalf("tasks/get = %v", got)
		}
	})

	t.Run("task support", func(t *testing.T) {
		alice.t = t
		r := alice.call("tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "x"}, "task": map[string]any{}})
		wantError(t, r, http.StatusOK, -32601)
		r = alice.call("tools/call", map[string]any{"name": "failing_job", "arguments": map[string]any{}})
		wantError(t, r, http.StatusOK, -32601)
	})

	t.Run("cancel", func(t *testing.T) {
		alice.t = t
		id := alice.createTask("slow_compute", map[string]any{"seconds": 60})["taskId"].(string)
		created := wantResult(t, alice.call("tasks/get", map[string]any{"taskId": id}))
		res := wantResult(t, alice.call("tasks/cancel", map[string]any{"taskId": id}))
		wantSessionTask(t, res)
		if res["status"] != "cancelled" || res["taskId"] != id || res["createdAt"] != created["createdAt"] {
			t.Fatalf("tasks/cancel = %v (created %v)", res, created)
		}
		if got := wantResult(t, alice.call("tasks/get", map[string]any{"taskId": id})); got["status"] != "cancelled" {
			t.Fatalf("tasks/get after cancel = %v", got)
		}
		snap := s.awaitEnd(t, aliceSubject, runOf(t, id), 20*time.Second)
		if snap.Status != signals.StatusCancelled || snap.CancelReason != signals.ReasonCallerRequested {
			t.Fatalf("run = %s (reason %q)", snap.Status, snap.CancelReason)
		}
		wantError(t, alice.call("tasks/cancel", map[string]any{"taskId": id}), http.StatusOK, -32602)
	})

	t.Run("list", func(t *testing.T) {
		alice.t, bob.t = t, t
		mine := alice.createTask("slow_compute", map[string]any{"seconds": 0})["taskId"].(string)
		theirs := bob.createTask("slow_compute", map[string]any{"seconds": 0})["taskId"].(string)
		ids := func(c *sessionlessClient) []string {
			res := wantResult(t, c.call("tasks/list", nil))
			var out []string
			for _, tk := range res["tasks"].([]any) {
				wantSessionTask(t, tk.(map[string]any))
				out = append(out, tk.(map[string]any)["taskId"].(string))
			}
			return out
		}
		// Visibility follows the starts (the rule of internal/testing/visibility):
		// wait until each caller lists its own run and not the other's.
		visibility.Require(t, "each caller's run listed to its caller only", func(context.Context) error {
			a, b := ids(alice), ids(bob)
			if !slices.Contains(a, mine) || slices.Contains(a, theirs) {
				return fmt.Errorf("alice lists %v (hers %s, bob's %s)", a, mine, theirs)
			}
			if !slices.Contains(b, theirs) || slices.Contains(b, mine) {
				return fmt.Errorf("bob lists %v (his %s, alice's %s)", b, theirs, mine)
			}
			return nil
		})
		wantError(t, alice.call("tasks/list", map[string]any{"cursor": "forged"}), http.StatusOK, -32602)
	})

	t.Run("isolation", func(t *testing.T) {
		alice.t, bob.t = t, t
		id := alice.createTask("slow_compute", map[string]any{"seconds": 30})["taskId"].(string)
		t.Cleanup(func() { alice.call("tasks/cancel", map[string]any{"taskId": id}) })
		unknown := "acme~2F" + strings.Repeat("A", 24)
		var answers []string
		for _, probe := range []struct {
			c   *sessionlessClient
			tid any
		}{{bob, id}, {alice, unknown}, {bob, "globex~2F" + strings.SplitN(runOf(t, id), "/", 2)[1]}, {alice, "nope"}, {alice, 7}} {
			for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
				r := probe.c.call(m, map[string]any{"taskId": probe.tid})
				var env map[string]json.RawMessage
				_ = json.Unmarshal(r.Raw, &env)
				answers = append(answers, fmt.Sprintf("%d %s", r.Status, env["error"]))
			}
		}
		for _, a := range answers[1:] {
			if a != answers[0] {
				t.Fatalf("answers differ: %q vs %q", a, answers[0])
			}
		}
		if !strings.Contains(answers[0], `"task not found"`) || !strings.Contains(answers[0], "-32602") {
			t.Fatalf("answer = %q", answers[0])
		}
		if snap, err := s.runs.Get(context.Background(), aliceSubject, runOf(t, id)); err != nil || snap.Status.Terminal() || snap.CancelReason != "" {
			t.Fatalf("alice's run after bob's cancel = %+v, %v", snap, err)
		}
	})

	t.Run("unknown methods", func(t *testing.T) {
		alice.t = t
		for _, version := range []string{"2025-11-25", "2025-06-18", ""} {
			alice.version = version
			r := alice.call("tasks/nonexistent", map[string]any{})
			if r.Error == nil || r.Error.Code != -32601 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("version %q: unknown method = HTTP %d %q %s", version, r.Status, r.Header.Get("Content-Type"), r.Raw)
			}
		}
		alice.version = "2025-11-25"
		// The dialect's methods do not exist in 2026-07-28.
		modern := s.client(t, "ka", tasksCaps())
		for _, m := range []string{"tasks/result", "tasks/list"} {
			r := modern.call(m, map[string]any{"taskId": "x"}, nil)
			wantError(t, r, http.StatusNotFound, -32601)
			if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("%s: Content-Type %q", m, r.Header.Get("Content-Type"))
			}
		}
	})
}

// TestDialectInputOverSession runs the dialect's input_required path in a
// session (stdio): tasks/result carries the run's question to the client as
// elicitation/create tied to the task, and the answer resolves it.
func TestDialectInputOverSession(t *testing.T) {
	s := newStack(t, nil, "")
	peer := serveStdio(t, s.mount, auth.Anonymous())
	next := func() map[string]any {
		t.Helper()
		select {
		case msg, ok := <-peer.msgs:
			if !ok {
				t.Fatal("stdout ended")
			}
			return msg
		case <-time.After(30 * time.Second):
			t.Fatal("no message on stdout")
			return nil
		}
	}
	send := func(v any) {
		t.Helper()
		b, _ := json.Marshal(v)
		peer.send(t, b)
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{"elicitation": map[string]any{}},
		"clientInfo": map[string]any{"name": "t", "version": "0"}}})
	if caps := peer.response(t)["result"].(map[string]any)["capabilities"].(map[string]any); caps["tasks"] == nil {
		t.Fatalf("capabilities = %v", caps)
	}
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{
		"name": "confirm_delete", "arguments": map[string]any{"filename": "a.txt"}, "task": map[string]any{}}})
	created := peer.response(t)
	tk, _ := created["result"].(map[string]any)["task"].(map[string]any)
	if tk == nil {
		t.Fatalf("tools/call = %v", created)
	}
	id := tk["taskId"].(string)
	for i := 3; ; i++ {
		send(map[string]any{"jsonrpc": "2.0", "id": i, "method": "tasks/get", "params": map[string]any{"taskId": id}})
		if peer.response(t)["result"].(map[string]any)["status"] == "input_required" {
			break
		}
		if i > 200 {
			t.Fatal("the task never became input_required")
		}
		time.Sleep(100 * time.Millisecond)
	}
	send(map[string]any{"jsonrpc": "2.0", "id": "result", "method": "tasks/result", "params": map[string]any{"taskId": id}})
	req := next()
	params, _ := req["params"].(map[string]any)
	if req["method"] != "elicitation/create" || relatedTask(params) != id || !strings.Contains(params["message"].(string), "a.txt") {
		t.Fatalf("want elicitation/create for the task, got %v", req)
	}
	send(map[string]any{"jsonrpc": "2.0", "id": req["id"], "result": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}})
	resp := peer.response(t)
	res, _ := resp["result"].(map[string]any)
	if resp["id"] != "result" || res == nil || text(t, res) != "Deleted a.txt." || relatedTask(res) != id {
		t.Fatalf("tasks/result = %v", resp)
	}
}

// TestDialectInputOverHTTPSession is the TS SDK v1 experimental-tasks flow
// in an HTTP session: the task is created with params.task, turns
// input_required, and tasks/result carries the question as
// elicitation/create (tied to the task) on its own stream; the answer, a
// POST of the session, resolves it, and the tool's result follows.
func TestDialectInputOverHTTPSession(t *testing.T) {
	s := newStack(t, nil, "")
	hdr := map[string]string{"Content-Type": "application/json", "Accept": acceptJSON}
	r := post(t, s.URL+"/mcp", hdr, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{"elicitation":{}},"clientInfo":{"name":"dialect","version":"0"}}}`))
	session := r.Header.Get("Mcp-Session-Id")
	if session == "" || r.Result["capabilities"].(map[string]any)["tasks"] == nil {
		t.Fatalf("initialize: HTTP %d session %q %s", r.Status, session, r.Raw)
	}
	hdr["Mcp-Session-Id"], hdr["MCP-Protocol-Version"] = session, "2025-11-25"
	if r := post(t, s.URL+"/mcp", hdr, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); r.Status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d %s", r.Status, r.Raw)
	}
	created := wantResult(t, post(t, s.URL+"/mcp", hdr, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":`+
		`{"name":"confirm_delete","arguments":{"filename":"s.txt"},"task":{}}}`)))
	id := created["task"].(map[string]any)["taskId"].(string)
	for i := 0; ; i++ {
		got := wantResult(t, post(t, s.URL+"/mcp", hdr, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":%q}}`, id))))
		if got["status"] == "input_required" {
			break
		}
		if i > 200 {
			t.Fatalf("the task never became input_required: %v", got)
		}
		time.Sleep(100 * time.Millisecond)
	}

	conn, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"taskId":%q}}`, id)
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: %s\r\n"+
		"MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s",
		s.addr(), acceptJSON, session, len(body), body)
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	stream := sseReader{bufio.NewReader(resp.Body)}
	ask := stream.next(t)
	params, _ := ask["params"].(map[string]any)
	if ask["method"] != "elicitation/create" || relatedTask(params) != id {
		t.Fatalf("first message on the tasks/result stream = %v", ask)
	}
	answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": ask["id"],
		"result": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}})
	if r := post(t, s.URL+"/mcp", hdr, answer); r.Status != http.StatusAccepted {
		t.Fatalf("answer: HTTP %d %s", r.Status, r.Raw)
	}
	res := stream.next(t)
	result, _ := res["result"].(map[string]any)
	if res["id"] != float64(4) || text(t, result) != "Deleted s.txt." || relatedTask(result) != id {
		t.Fatalf("tasks/result = %v", res)
	}
}
