package mcpmount

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// These tests prove elicitation for session-dialect clients (2025-06-18,
// 2025-11-25) on the wire against the whole product on the embedded
// Temporal server: a blocking tools/call whose run asks for approval gets a
// real elicitation/create on its stream, and the answer resolves the
// interrupt.

// reportArgs are publish_report's arguments in these tests.
var reportArgs = map[string]any{"title": "Q3", "topic": "sales", "sections": 1}

// sessionClient connects the go-sdk client to the stack at version,
// answering elicitations with answer (nil: no elicitation capability). Its
// automatic MRTR retries are off, as session-dialect clients have none: only
// elicitation/create requests reach answer.
func sessionClient(t *testing.T, s *stack, version string, answer func(*mcp.ElicitRequest) (*mcp.ElicitResult, error),
	onProgress func(*mcp.ProgressNotificationClientRequest)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if onProgress != nil {
				onProgress(r)
			}
		},
	}
	if answer != nil {
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return answer(r) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "session-test", Version: "0"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("no content in %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content = %#v", res.Content[0])
	}
	return tc.Text
}

// TestSessionElicitation: the go-sdk client at each session-dialect version,
// with an elicitation handler, calls publish_report without a task. The
// run's approval reaches it as elicitation/create during the call; accept
// publishes the report (the tool's result text), decline and cancel take
// the tool's own paths (not published; the run cancelled).
func TestSessionElicitation(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		for _, tt := range []struct {
			action  string
			content map[string]any
			want    string
			isError bool
			status  signals.Status
		}{
			{"accept", map[string]any{"action": "accept"}, "published at", false, signals.StatusCompleted},
			{"decline", nil, `was not published: the reviewer chose "reject"`, false, signals.StatusCompleted},
			{"cancel", nil, "the run was cancelled", true, signals.StatusCancelled},
		} {
			t.Run(version+"/"+tt.action, func(t *testing.T) {
				var mu sync.Mutex
				var asked []*mcp.ElicitParams
				cs := sessionClient(t, s, version, func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, r.Params)
					mu.Unlock()
					return &mcp.ElicitResult{Action: tt.action, Content: tt.content}, nil
				}, nil)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "publish_report", Arguments: reportArgs})
				if err != nil {
					t.Fatalf("tools/call: %v", err)
				}
				if got := resultText(t, res); !strings.Contains(got, tt.want) || res.IsError != tt.isError {
					t.Fatalf("result = %q (isError %v), want %q (isError %v)", got, res.IsError, tt.want, tt.isError)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(asked) != 1 || !strings.Contains(asked[0].Message, "Publish the report") {
					t.Fatalf("elicitations = %+v", asked)
				}
				runID := p.next(t)
				snap := s.awaitEnd(t, auth.Anonymous(), runID, 20*time.Second)
				if snap.Status != tt.status || len(snap.Resolved) != 1 {
					t.Fatalf("run = %s, resolved %+v", snap.Status, snap.Resolved)
				}
			})
		}
	}
}

// TestSessionElicitationStdio: a session-dialect client on stdio declares
// elicitation in initialize; publish_report's approval reaches it as an
// elicitation/create request on stdout, and its answer on stdin completes
// the call.
func TestSessionElicitationStdio(t *testing.T) {
	s := newStack(t, nil, "")
	peer := serveStdio(t, s.mount, auth.Anonymous())
	peer.send(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
		`"capabilities":{"elicitation":{}},"clientInfo":{"name":"stdio-test","version":"0"}}}`))
	if r := peer.response(t); r["result"] == nil {
		t.Fatalf("initialize = %v", r)
	}
	peer.send(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "publish_report", "arguments": reportArgs}})
	peer.send(t, call)
	timeout := time.After(60 * time.Second)
	asked := 0
	for {
		var msg map[string]any
		select {
		case m, ok := <-peer.msgs:
			if !ok {
				t.Fatal("stdout ended")
			}
			msg = m
		case <-timeout:
			t.Fatal("no answer to the call")
		}
		if msg["method"] == "elicitation/create" {
			asked++
			answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg["id"],
				"result": map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}}})
			peer.send(t, answer)
			continue
		}
		if msg["id"] != float64(2) {
			continue
		}
		res, _ := msg["result"].(map[string]any)
		if asked != 1 || res == nil || res["isError"] != false || !strings.Contains(text(t, res), "published at") {
			t.Fatalf("after %d elicitations, the call = %v", asked, msg)
		}
		return
	}
}

// sseReader reads the events of an SSE response one JSON-RPC message at a
// time.
type sseReader struct{ r *bufio.Reader }

// next returns the next message (comment lines skipped).
func (s sseReader) next(t *testing.T) map[string]any {
	t.Helper()
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("read the stream: %v", err)
		}
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			var msg map[string]any
			if err := json.Unmarshal([]byte(d), &msg); err != nil {
				t.Fatalf("event %q: %v", d, err)
			}
			return msg
		}
	}
}

// rawSession initializes a 2025-06-18 session that declares elicitation,
// by hand, and returns its Mcp-Session-Id.
func rawSession(t *testing.T, s *stack, key string) string {
	t.Helper()
	hdr := map[string]string{"Content-Type": "application/json", "Accept": acceptJSON}
	if key != "" {
		hdr["Authorization"] = "Bearer " + key
	}
	r := post(t, s.URL+"/mcp", hdr, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
		`"capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"0"}}}`))
	id := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK || r.Result == nil || id == "" {
		t.Fatalf("initialize: HTTP %d session %q body %s", r.Status, id, r.Raw)
	}
	hdr["Mcp-Session-Id"] = id
	hdr["MCP-Protocol-Version"] = "2025-06-18"
	if r := post(t, s.URL+"/mcp", hdr, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); r.Status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d %s", r.Status, r.Raw)
	}
	return id
}

// sessionCall writes a session-dialect tools/call on a raw socket and returns
// the connection and a reader of its SSE response.
func sessionCall(t *testing.T, s *stack, session, key string, id int, name string, args map[string]any) (net.Conn, sseReader) {
	t.Helper()
	conn, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	var b strings.Builder
	fmt.Fprintf(&b, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: %s\r\n", s.addr(), acceptJSON)
	fmt.Fprintf(&b, "MCP-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: %s\r\n", session)
	if key != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", key)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("tools/call: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return conn, sseReader{bufio.NewReader(resp.Body)}
}

// TestSessionElicitationRaw: the session headers by hand. initialize
// answers an Mcp-Session-Id; a tools/call of the session gets the
// approval as elicitation/create on its own SSE stream; the answer is a
// POST of the session answered 202; the result follows on the call's
// stream. The session is the caller's: another credential gets 404, and
// after DELETE the session is gone.
func TestSessionElicitationRaw(t *testing.T) {
	s := newStack(t, keysFor(t, "ka=acme:alice,kb=acme:bob"), "")
	session := rawSession(t, s, "ka")
	conn, stream := sessionCall(t, s, session, "ka", 7, "publish_report", reportArgs)
	defer conn.Close()
	ask := stream.next(t)
	if ask["method"] != "elicitation/create" || ask["id"] == nil {
		t.Fatalf("first message = %v", ask)
	}
	hdr := map[string]string{"Content-Type": "application/json", "Accept": acceptJSON, "Mcp-Session-Id": session,
		"MCP-Protocol-Version": "2025-06-18", "Authorization": "Bearer kb"}
	answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": ask["id"],
		"result": map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}}})
	// Bob cannot use Alice's session, not even to answer her question.
	if r := post(t, s.URL+"/mcp", hdr, answer); r.Status != http.StatusNotFound || r.Error == nil {
		t.Fatalf("answer with another credential: HTTP %d %s", r.Status, r.Raw)
	}
	hdr["Authorization"] = "Bearer ka"
	if r := post(t, s.URL+"/mcp", hdr, answer); r.Status != http.StatusAccepted {
		t.Fatalf("answer: HTTP %d %s", r.Status, r.Raw)
	}
	res := stream.next(t)
	if res["id"] != float64(7) || !strings.Contains(text(t, res["result"]), "published at") {
		t.Fatalf("call = %v", res)
	}

	req, _ := http.NewRequest(http.MethodDelete, s.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Authorization", "Bearer ka")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := post(t, s.URL+"/mcp", hdr, []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		if r.Status == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools/list after DELETE: HTTP %d %s", r.Status, r.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSessionElicitationDisconnectCancels: the client of a session-dialect
// blocking call closes its socket while the elicitation is pending. The
// call owned its run, so the run is cancelled with mcp-request-cancelled.
func TestSessionElicitationDisconnectCancels(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	session := rawSession(t, s, "")
	conn, stream := sessionCall(t, s, session, "", 3, "publish_report", reportArgs)
	if ask := stream.next(t); ask["method"] != "elicitation/create" {
		t.Fatalf("first message = %v", ask)
	}
	runID := p.next(t)
	conn.Close()
	wantCancelledByRequest(t, s.awaitEnd(t, auth.Anonymous(), runID, 30*time.Second))
}

// TestProgressNotifications: a blocking call whose request carries a
// progressToken gets notifications/progress on its stream while the run
// works: its token, progress increasing with each, and the run's status
// message, never tool content. Each protocol era, through the go-sdk
// client; a short keep-alive makes the heartbeat part of it.
func TestProgressNotifications(t *testing.T) {
	s := newStackWith(t, nil, "", func(o *Options) func(*Mount) {
		o.KeepAlive = 100 * time.Millisecond
		return nil
	})
	for _, version := range []string{ProtocolVersion, "2025-11-25", "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			var mu sync.Mutex
			var got []*mcp.ProgressNotificationParams
			cs := sessionClient(t, s, version, nil, func(r *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				got = append(got, r.Params)
				mu.Unlock()
			})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			params := &mcp.CallToolParams{Name: "delay", Arguments: map[string]any{"delayMs": 1500}}
			params.SetProgressToken("tok-" + version)
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || !strings.Contains(resultText(t, res), "1500") {
				t.Fatalf("result = %+v", res)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) < 2 {
				t.Fatalf("%d progress notifications, want several", len(got))
			}
			last := 0.0
			for _, n := range got {
				if n.ProgressToken != "tok-"+version || n.Progress <= last || !strings.HasPrefix(n.Message, "the run is ") {
					t.Fatalf("notification %+v after progress %v", n, last)
				}
				last = n.Progress
			}
		})
	}
}

// TestSessionCallEndsWithoutAnswer: a session-dialect blocking call whose
// client will not get its answer owns its run, although the connection
// stays up: the client sends notifications/cancelled for it (what the TS
// client does at its request timeout), or ends the session with DELETE.
// Either way the run is cancelled with mcp-request-cancelled.
func TestSessionCallEndsWithoutAnswer(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	for _, tt := range []struct {
		name string
		end  func(t *testing.T, session string)
	}{
		{"notifications/cancelled", func(t *testing.T, session string) {
			hdr := map[string]string{"Content-Type": "application/json", "Accept": acceptJSON, "Mcp-Session-Id": session,
				"MCP-Protocol-Version": "2025-06-18"}
			r := post(t, s.URL+"/mcp", hdr, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"timed out"}}`))
			if r.Status != http.StatusAccepted {
				t.Fatalf("notifications/cancelled: HTTP %d %s", r.Status, r.Raw)
			}
		}},
		{"DELETE", func(t *testing.T, session string) {
			req, _ := http.NewRequest(http.MethodDelete, s.URL+"/mcp", nil)
			req.Header.Set("Mcp-Session-Id", session)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE: HTTP %d", resp.StatusCode)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			session := rawSession(t, s, "")
			conn, _ := sessionCall(t, s, session, "", 3, "delay", map[string]any{"delayMs": 60000})
			defer conn.Close()
			runID := p.next(t)
			s.awaitActivityStarted(t, runID)
			tt.end(t, session)
			wantCancelledByRequest(t, s.awaitEnd(t, auth.Anonymous(), runID, 30*time.Second))
		})
	}
}

// TestSessionElicitationLateAnswer: of multi_input's two questions, both
// asked by elicitation/create, one is answered elsewhere first (here by the
// run service, as REST does). The server withdraws that request
// (notifications/cancelled naming it) while the call waits for the other;
// the client's late answer to it is accepted and changes nothing; the
// other answer completes the call with the first answer applied.
func TestSessionElicitationLateAnswer(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	session := rawSession(t, s, "")
	conn, stream := sessionCall(t, s, session, "", 4, "multi_input", map[string]any{})
	defer conn.Close()
	asks := map[string]map[string]any{} // by the property asked
	for len(asks) < 2 {
		ask := stream.next(t)
		params, _ := ask["params"].(map[string]any)
		schema, _ := params["requestedSchema"].(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		if ask["method"] != "elicitation/create" || len(props) != 1 {
			t.Fatalf("message = %v", ask)
		}
		for k := range props {
			asks[k] = ask
		}
	}
	runID := p.next(t)
	snap, err := s.runs.Get(context.Background(), auth.Anonymous(), runID)
	if err != nil || len(snap.Interrupts) != 2 {
		t.Fatalf("run = %+v, %v", snap, err)
	}
	nameKey := ""
	for _, it := range snap.Interrupts {
		if strings.Contains(string(it.Schema), `"name"`) {
			nameKey = it.ID
		}
	}
	if _, err := s.runs.Resolve(context.Background(), auth.Anonymous(), runID, signals.Resolution{
		InterruptID: nameKey, Action: signals.ActionAccept, Content: json.RawMessage(`{"name":"Ada"}`)}); err != nil {
		t.Fatal(err)
	}
	msg := stream.next(t)
	params, _ := msg["params"].(map[string]any)
	if msg["method"] != "notifications/cancelled" || params["requestId"] != asks["name"]["id"] {
		t.Fatalf("after the question was answered elsewhere: %v, want its elicitation (id %v) withdrawn", msg, asks["name"]["id"])
	}
	hdr := map[string]string{"Content-Type": "application/json", "Accept": acceptJSON, "Mcp-Session-Id": session,
		"MCP-Protocol-Version": "2025-06-18"}
	for _, a := range []struct {
		ask     map[string]any
		content map[string]any
	}{{asks["name"], map[string]any{"name": "Bob"}}, {asks["color"], map[string]any{"color": "teal"}}} {
		answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": a.ask["id"],
			"result": map[string]any{"action": "accept", "content": a.content}})
		if r := post(t, s.URL+"/mcp", hdr, answer); r.Status != http.StatusAccepted {
			t.Fatalf("answer %v: HTTP %d %s", a.content, r.Status, r.Raw)
		}
	}
	res := stream.next(t)
	if res["id"] != float64(4) || text(t, res["result"]) != "Hello Ada, your favourite colour is teal." {
		t.Fatalf("call = %v", res)
	}
	end := s.awaitEnd(t, auth.Anonymous(), runID, 20*time.Second)
	if end.Status != signals.StatusCompleted || len(end.Resolved) != 2 {
		t.Fatalf("run = %s, resolved %+v", end.Status, end.Resolved)
	}
}

// TestSessionElicitationQuestions: a session-dialect client is asked a tool's
// pre-run input before the run starts, and each of a run's successive
// questions while the call waits, all by elicitation/create; the answers
// reach the tool.
func TestSessionElicitationQuestions(t *testing.T) {
	s := newStack(t, nil, "")
	answer := func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		b, _ := json.Marshal(r.Params.RequestedSchema)
		var schema struct {
			Properties map[string]any `json:"properties"`
		}
		_ = json.Unmarshal(b, &schema)
		content := map[string]any{}
		if _, ok := schema.Properties["name"]; ok {
			content["name"] = "Ada"
		}
		if _, ok := schema.Properties["color"]; ok {
			content["color"] = "teal"
		}
		return &mcp.ElicitResult{Action: "accept", Content: content}, nil
	}
	for _, tt := range []struct{ tool, want string }{
		{"test_tool_with_task", "Hello, Ada!"},
		{"multi_input", "Hello Ada, your favourite colour is teal."},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			cs := sessionClient(t, s, "2025-11-25", answer, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != tt.want || res.IsError {
				t.Fatalf("result = %q (isError %v), want %q", got, res.IsError, tt.want)
			}
		})
	}
}

// TestSessionLimits: an initialize past MaxSessions is refused with 503
// (and a JSON-RPC error) until a session ends; GET and DELETE need a live
// session of the caller (404 otherwise, 405 without one).
func TestSessionLimits(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.MaxSessions = 1 })
	initialize := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{},"clientInfo":{"name":"limits","version":"0"}}}`)
	hdr := map[string]string{"Content-Type": "application/json", "Accept": acceptJSON}
	first := post(t, s.URL, hdr, initialize)
	session := first.Header.Get("Mcp-Session-Id")
	if first.Status != http.StatusOK || session == "" {
		t.Fatalf("first initialize: HTTP %d %s", first.Status, first.Raw)
	}
	second := post(t, s.URL, hdr, initialize)
	if second.Status != http.StatusServiceUnavailable || second.Error == nil || second.Header.Get("Retry-After") == "" {
		t.Fatalf("initialize past MaxSessions: HTTP %d %s", second.Status, second.Raw)
	}

	do := func(method, id string) int {
		req, _ := http.NewRequest(method, s.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		if id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := do(http.MethodGet, ""); got != http.StatusMethodNotAllowed {
		t.Fatalf("GET without a session: %d", got)
	}
	if got := do(http.MethodGet, "no-such-session"); got != http.StatusNotFound {
		t.Fatalf("GET of an unknown session: %d", got)
	}
	if got := do(http.MethodDelete, session); got != http.StatusNoContent {
		t.Fatalf("DELETE: %d", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := post(t, s.URL, hdr, initialize)
		if r.Status == http.StatusOK && r.Header.Get("Mcp-Session-Id") != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("initialize after the session ended: HTTP %d %s", r.Status, r.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSessionArgumentsProblem: arguments the SDK cannot decode (a number
// past float64) in a session's tools/call are the tool-input error, as on
// the stateless path, and no run starts.
func TestSessionArgumentsProblem(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	session := rawSession(t, s, "")
	hdr := map[string]string{"Content-Type": "application/json", "Accept": acceptJSON, "Mcp-Session-Id": session,
		"MCP-Protocol-Version": "2025-06-18"}
	r := post(t, s.URL+"/mcp", hdr, []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"delay","arguments":{"delayMs":1e309}}}`))
	res := wantResult(t, r)
	if res["isError"] != true || !strings.Contains(text(t, res), "delayMs") || !strings.Contains(text(t, res), "1e309") {
		t.Fatalf("tools/call = %s", r.Raw)
	}
	select {
	case id := <-p.started:
		t.Fatalf("run %s started for refused arguments", id)
	default:
	}
}
