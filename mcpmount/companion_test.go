package mcpmount

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// TestCompanionListing: the companion tools are listed to a request that
// did not declare the Tasks extension (one that declared elicitation
// alone too: its call may be handed over at the bound), and to no other,
// which is listed the list tool alone; Options.NoCompanionTools turns them
// off, but for the list tool.
func TestCompanionListing(t *testing.T) {
	on := newTestServer(t, nil)
	off := newTestServer(t, func(o *Options) { o.NoCompanionTools = true })
	catalogTools := "ask_first,greet,required_job,slow"
	for _, tc := range []struct {
		name string
		s    *testServer
		caps map[string]any
		want string
	}{
		{"nothing declared", on, map[string]any{}, catalogTools + "," + companionTools},
		{"url elicitation only", on, map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}, catalogTools + "," + companionTools},
		{"tasks", on, map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}}, catalogTools + "," + runListTool},
		{"form elicitation", on, map[string]any{"elicitation": map[string]any{}}, catalogTools + "," + companionTools},
		{"turned off", off, map[string]any{}, catalogTools + "," + runListTool},
	} {
		res := wantResult(t, tc.s.client(t, tc.caps).call("tools/list", nil, nil))
		if got := strings.Join(toolNames(res), ","); got != tc.want {
			t.Errorf("%s: tools/list = %s, want %s", tc.name, got, tc.want)
		}
	}
	// A session-dialect client that declared elicitation is asked its
	// questions during the call, and follows the handoff at the bound with
	// the companion tools.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "eliciting", Version: "0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: on.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 8 {
		t.Fatalf("eliciting session-dialect client lists %d tools (%v), want the catalog's 4 and the 4 companion tools", len(tools.Tools), err)
	}
}

// companionCaller calls a tool as a client that declared neither Tasks nor
// elicitation, over one transport, and returns the tool result as JSON.
type companionCaller func(t *testing.T, name string, args map[string]any) map[string]any

// TestCompanionRunToCompletion: over each transport, a client that
// declared neither Tasks nor elicitation runs a tool that asks a question
// to completion through the companion tools: the call answers the run and
// its question instead of -32021; a status call shows the question and its
// schema; an answer that does not fit is refused and the question stays
// open; a fitting one completes the run, whose result the status shows.
func TestCompanionRunToCompletion(t *testing.T) {
	s := newStack(t, nil, "")
	for _, tc := range []struct {
		name string
		dial func(t *testing.T) companionCaller
	}{
		{"2026-07-28 over HTTP", func(t *testing.T) companionCaller { return modernCompanion(s.client(t, "", map[string]any{})) }},
		{"2025-06-18 session (go-sdk client)", func(t *testing.T) companionCaller { return sessionCompanion(t, s.URL+"/mcp") }},
		{"stdio", func(t *testing.T) companionCaller { return stdioCompanion(t, s.mount) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := tc.dial(t)
			res := call(t, "confirm_delete", map[string]any{"filename": "a.txt"})
			// confirm_delete declares an output schema: the handoff is text
			// alone, marked isError, saying the call did not fail.
			body := text(t, res)
			m := regexp.MustCompile(`^Run (\S+) of confirm_delete is waiting for an answer\. Question "([^"]+)"`).FindStringSubmatch(body)
			if m == nil || res["isError"] != true || !strings.Contains(body, "must not be repeated") || !strings.Contains(body, "openwop_run_answer") {
				t.Fatalf("call of a tool that asks = %v", res)
			}
			runID, key := m[1], m[2]
			st := companionStatus(t, call(t, "openwop_run_status", map[string]any{"runId": runID}))
			if st.Status != "input_required" || len(st.Questions) != 1 || st.Questions[0].Key != key ||
				!strings.Contains(string(st.Questions[0].Schema), `"confirm"`) {
				t.Fatalf("status = %+v", st)
			}
			refused := call(t, "openwop_run_answer", map[string]any{"runId": runID, "key": key, "content": map[string]any{"confirm": "yes"}})
			if refused["isError"] != true || !strings.Contains(text(t, refused), "confirm") || !strings.Contains(text(t, refused), "boolean") {
				t.Fatalf("refused answer = %v", refused)
			}
			if st := companionStatus(t, call(t, "openwop_run_status", map[string]any{"runId": runID})); st.Status != "input_required" {
				t.Fatalf("after a refused answer the question is not open: %+v", st)
			}
			call(t, "openwop_run_answer", map[string]any{"runId": runID, "key": key, "content": map[string]any{"confirm": true}})
			st = companionStatus(t, call(t, "openwop_run_status", map[string]any{"runId": runID, "waitSeconds": 30}))
			if st.Status != "completed" || st.Result == nil || !strings.Contains(string(st.Result), "Deleted a.txt.") {
				t.Fatalf("status after the answer = %+v", st)
			}
		})
	}
}

// TestCompanionTenancyAndBound: the companion tools refuse another tenant's
// run exactly as one that does not exist, and leave it untouched; a call
// that outlasts the blocking bound hands its run over instead of an
// error, and the cancel tool cancels it.
func TestCompanionTenancyAndBound(t *testing.T) {
	s := newStackWith(t, keysFor(t, "ka=acme:alice,kb=globex:bob"), "", func(o *Options) func(*Mount) {
		o.MaxBlockingWait = time.Second
		return nil
	})
	alice := modernCompanion(s.client(t, "ka", map[string]any{}))
	bob := modernCompanion(s.client(t, "kb", map[string]any{}))
	res := alice(t, "slow_compute", map[string]any{"seconds": 60, "label": "bound"})
	runID := regexp.MustCompile(`^Run (\S+) of slow_compute is still working`).FindStringSubmatch(text(t, res))
	if runID == nil || !strings.Contains(text(t, res), "openwop_run_status") {
		t.Fatalf("call at the bound = %v", res)
	}
	id := runID[1]
	unknown := "acme/" + strings.Repeat("A", 24)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"openwop_run_status", map[string]any{}},
		{"openwop_run_answer", map[string]any{"key": id + "-i1", "content": map[string]any{}}},
		{"openwop_run_cancel", map[string]any{}},
	} {
		foreign, missing := map[string]any{"runId": id}, map[string]any{"runId": unknown}
		for k, v := range tc.args {
			foreign[k], missing[k] = v, v
		}
		a, b := bob(t, tc.tool, foreign), bob(t, tc.tool, missing)
		ta, tb := text(t, a), strings.ReplaceAll(text(t, b), unknown, id)
		if a["isError"] != true || ta != tb || a["structuredContent"] != nil || b["structuredContent"] != nil {
			t.Errorf("%s: another tenant's run = %v, a missing one = %v", tc.tool, a, b)
		}
	}
	snap, err := s.runs.Get(context.Background(), signals.Subject{Tenant: "acme", SubjectID: "alice"}, id)
	if err != nil || snap.Status.Terminal() {
		t.Fatalf("alice's run after bob's calls = %+v, %v", snap, err)
	}
	if st := companionStatus(t, alice(t, "openwop_run_cancel", map[string]any{"runId": id})); st.Status != "cancelled" && st.Status != "working" {
		t.Fatalf("cancel = %+v", st)
	}
	// waitSeconds is bounded by MaxBlockingWait (1 s here): wait in turns.
	for turn := 0; ; turn++ {
		st := companionStatus(t, alice(t, "openwop_run_status", map[string]any{"runId": id, "waitSeconds": 30}))
		if st.Status == "cancelled" {
			break
		}
		if turn == 30 {
			t.Fatalf("status after cancel = %+v", st)
		}
	}
}

// companionRun is the structured content of a companion tool's result.
type companionRun struct {
	RunID     string `json:"runId"`
	Status    string `json:"status"`
	Questions []struct {
		Key    string          `json:"key"`
		Schema json.RawMessage `json:"schema"`
	} `json:"questions"`
	Result json.RawMessage `json:"result"`
	Next   string          `json:"next"`
}

func companionStatus(t *testing.T, res map[string]any) companionRun {
	t.Helper()
	raw, _ := json.Marshal(res["structuredContent"])
	var st companionRun
	if err := json.Unmarshal(raw, &st); err != nil || st.RunID == "" || st.Next == "" {
		t.Fatalf("companion result = %v (%v)", res, err)
	}
	return st
}

func modernCompanion(c *client) companionCaller {
	return func(t *testing.T, name string, args map[string]any) map[string]any {
		c.t = t
		return callTool(t, c, name, args)
	}
}

// sessionCompanion is the go-sdk client in an HTTP session of the session
// dialect, with no elicitation handler: it declares neither capability.
func sessionCompanion(t *testing.T, url string) companionCaller {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c := mcp.NewClient(&mcp.Implementation{Name: "plain-host", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: http.DefaultClient},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return func(t *testing.T, name string, args map[string]any) map[string]any {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raw, _ := json.Marshal(res)
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// stdioCompanion is a session over stdio that declared nothing.
func stdioCompanion(t *testing.T, m *Mount) companionCaller {
	peer := serveStdio(t, m, auth.Anonymous())
	peer.send(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
	peer.response(t)
	peer.send(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	id := 1
	return func(t *testing.T, name string, args map[string]any) map[string]any {
		id++
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": map[string]any{"name": name, "arguments": args}})
		peer.send(t, body)
		msg := peer.response(t)
		res, ok := msg["result"].(map[string]any)
		if !ok {
			t.Fatalf("%s over stdio = %v", name, msg)
		}
		return res
	}
}

// TestCompanionApprovers: an answer through the companion tool obeys the
// question's approvers as tasks/update does, and says so: an ineligible
// caller is refused by name and the gate stays open; the listed approver's
// answer completes the run.
func TestCompanionApprovers(t *testing.T) {
	s := newStack(t, keysFor(t, "ka=acme:urn:someone,kl=acme:urn:conformance:listed-approver"), "")
	someone := modernCompanion(s.client(t, "ka", map[string]any{}))
	listed := modernCompanion(s.client(t, "kl", map[string]any{}))
	m := regexp.MustCompile(`^Run (\S+) of conformance-approval-approvers is waiting for an answer\. Question "([^"]+)"`).
		FindStringSubmatch(text(t, someone(t, "conformance-approval-approvers", map[string]any{})))
	if m == nil {
		t.Fatal("the call did not hand its run over with its question")
	}
	answer := map[string]any{"runId": m[1], "key": m[2], "content": map[string]any{"action": "accept"}}
	res := someone(t, "openwop_run_answer", answer)
	if res["isError"] != true || !strings.Contains(text(t, res), "you may not answer") {
		t.Fatalf("ineligible answer = %v", res)
	}
	if st := companionStatus(t, someone(t, "openwop_run_status", map[string]any{"runId": m[1]})); st.Status != "input_required" {
		t.Fatalf("the gate after an ineligible answer = %+v", st)
	}
	listed(t, "openwop_run_answer", answer)
	if st := companionStatus(t, listed(t, "openwop_run_status", map[string]any{"runId": m[1], "waitSeconds": 30})); st.Status != "completed" {
		t.Fatalf("the gate after the approver's answer = %+v", st)
	}
}

// TestCompanionSessionDeclaredTasks: a 2025-11-25 session whose initialize
// declared capabilities.tasks follows runs as tasks (params.task), over
// HTTP and stdio: it is not offered the companion tools, and its call of a
// tool that may ask a question without params.task is refused with -32021
// as before, not handed off to tools it was never listed. The same session
// without the capability is offered them.
func TestCompanionSessionDeclaredTasks(t *testing.T) {
	s := newStack(t, nil, "")
	initialize := func(caps string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps +
			`,"clientInfo":{"name":"tasks-client","version":"0"}}}`
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	const call = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"confirm_delete","arguments":{"filename":"c.txt"}}}`
	overHTTP := func(t *testing.T, caps string) (listed, called map[string]any) {
		hdr := map[string]string{"Content-Type": "application/json", "Accept": acceptJSON}
		r := post(t, s.URL+"/mcp", hdr, []byte(initialize(caps)))
		session := r.Header.Get("Mcp-Session-Id")
		if session == "" {
			t.Fatalf("initialize: HTTP %d %s", r.Status, r.Raw)
		}
		hdr["Mcp-Session-Id"], hdr["MCP-Protocol-Version"] = session, "2025-11-25"
		post(t, s.URL+"/mcp", hdr, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		var l, c map[string]any
		_ = json.Unmarshal(post(t, s.URL+"/mcp", hdr, []byte(list)).Raw, &l)
		_ = json.Unmarshal(post(t, s.URL+"/mcp", hdr, []byte(call)).Raw, &c)
		return l, c
	}
	overStdio := func(t *testing.T, caps string) (listed, called map[string]any) {
		peer := serveStdio(t, s.mount, auth.Anonymous())
		peer.send(t, []byte(initialize(caps)))
		peer.response(t)
		peer.send(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		peer.send(t, []byte(list))
		l := peer.response(t)
		peer.send(t, []byte(call))
		return l, peer.response(t)
	}
	for _, transport := range []struct {
		name  string
		serve func(t *testing.T, caps string) (map[string]any, map[string]any)
	}{{"HTTP session", overHTTP}, {"stdio", overStdio}} {
		t.Run(transport.name, func(t *testing.T) {
			listed, called := transport.serve(t, `{"tasks":{"requests":{"tools":{"call":{}}}}}`)
			res, _ := listed["result"].(map[string]any)
			if names := strings.Join(toolNames(res), ","); res == nil || strings.Contains(names, "openwop_run_status") {
				t.Fatalf("tools/list of a session that declared tasks = %s, want no companion tools", names)
			}
			e, _ := called["error"].(map[string]any)
			if e == nil || e["code"] != float64(-32021) {
				t.Fatalf("tools/call of an asking tool without params.task = %v, want -32021", called)
			}
			listed, _ = transport.serve(t, `{}`)
			res, _ = listed["result"].(map[string]any)
			if names := strings.Join(toolNames(res), ","); res == nil || !strings.Contains(names, companionTools) {
				t.Fatalf("tools/list of a session that declared nothing = %s, want the companion tools", names)
			}
		})
	}
}
