package mcpmount

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// approverKeys are the callers of the approver tests: someone, who is not
// an approver of conformance-approval-approvers, and its listed approver.
const approverKeys = "ka=acme:urn:someone,kl=acme:" + conformancetools.ListedApprover

// resolutionsSignalled counts the resolveInterrupt signals in the history
// of run taskID (a task id or a run id): what reached the run, applied or
// not.
func (s *stack) resolutionsSignalled(t *testing.T, taskID string) int {
	t.Helper()
	id, err := runid.Parse(taskID)
	if err != nil {
		t.Fatal(err)
	}
	it := s.env.Client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == signals.SignalResolveInterrupt {
			n++
		}
	}
	return n
}

// wantNotApprover fails unless r refuses the answer to key for want of
// being an approver: -32602 naming the key and the rule, in the message
// and in data.
func wantNotApprover(t *testing.T, r rpc, key string) {
	t.Helper()
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, `inputResponses["`+key+`"]`) ||
		!strings.Contains(r.Error.Message, "only its approvers may") {
		t.Fatalf("want -32602 refusing inputResponses[%q] (not an approver), got HTTP %d %s", key, r.Status, r.Raw)
	}
	var data map[string]string
	if err := json.Unmarshal(r.Error.Data, &data); err != nil || data["inputResponse"] != key || data["rule"] != "approvers" {
		t.Fatalf("error data = %s, want the key and the rule", r.Error.Data)
	}
}

// answerers returns the io.openwop/answerers _meta of the input request
// key of res (an InputRequiredResult or a DetailedTask).
func answerers(t *testing.T, res map[string]any, key string) map[string]any {
	t.Helper()
	req, _ := res["inputRequests"].(map[string]any)[key].(map[string]any)
	params, _ := req["params"].(map[string]any)
	meta, _ := params["_meta"].(map[string]any)
	a, ok := meta["io.openwop/answerers"].(map[string]any)
	if !ok {
		t.Fatalf("inputRequests[%q] = %v, want params._meta[io.openwop/answerers]", key, req)
	}
	return a
}

// wantAnswerers fails unless a names only the listed approver and says
// whether the caller may answer.
func wantAnswerers(t *testing.T, a map[string]any, callerMay bool) {
	t.Helper()
	if a["callerMay"] != callerMay || a["anyone"] != nil ||
		!slices.Equal(a["approvers"].([]any), []any{conformancetools.ListedApprover}) {
		t.Fatalf("answerers = %v, want the listed approver and callerMay %v", a, callerMay)
	}
}

// TestApproverRefusalTasksUpdate: a 2026-07-28 tasks/update answering a
// question whose approvers do not include the caller is refused with
// -32602 naming the key and the rule, even beside a key that is not open,
// and nothing is signalled: the question stays open. tasks/get tells each
// caller who may answer and whether it may, as a listen stream does. The approver's answer
// completes the run; a later answer to the closed key (a racing approver)
// is acked and resolves nothing.
func TestApproverRefusalTasksUpdate(t *testing.T) {
	s := newStack(t, keysFor(t, approverKeys), "")
	c := s.client(t, "ka", tasksCaps())
	listed := s.client(t, "kl", tasksCaps())
	id := callTool(t, c, "conformance-approval-approvers", map[string]any{})["taskId"].(string)
	res := waitTask(t, c, id, status("input_required"))
	var key string
	for k := range res["inputRequests"].(map[string]any) {
		key = k
	}
	wantAnswerers(t, answerers(t, res, key), false)
	wantAnswerers(t, answerers(t, wantResult(t, listed.call("tasks/get", map[string]any{"taskId": id}, nil)), key), true)
	// A listen stream tells its caller the same.
	st := openListen(t, s.addr(), "ka", "l", []string{id}, tasksCaps())
	st.next(t) // the acknowledgement
	note, _ := st.next(t)["params"].(map[string]any)
	wantAnswerers(t, answerers(t, note, key), false)

	approve := map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}}
	wantNotApprover(t, c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: approve, "never-issued": approve}}, nil), key)
	if r := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil)); r["status"] != "input_required" {
		t.Fatalf("the refused answer closed the question: %v", r)
	}
	if n := s.resolutionsSignalled(t, id); n != 0 {
		t.Fatalf("the refused answer signalled %d resolutions", n)
	}
	// A key that is not open is acked, whoever sends it.
	wantResult(t, c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"never-issued": approve}}, nil))

	wantResult(t, listed.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{key: approve}}, nil))
	waitTask(t, c, id, status("completed"))
	// The racing approver's answer arrives after the question closed: acked,
	// nothing resolved.
	wantResult(t, listed.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{key: approve}}, nil))
	if n := s.resolutionsSignalled(t, id); n != 1 {
		t.Fatalf("%d resolutions signalled, want the approver's one", n)
	}
}

// TestApproverRefusalMRTR: the InputRequiredResult of a caller that is no
// approver says so, and its retry answering the question is refused with
// -32602 naming the rule, nothing signalled; the listed approver's own
// call and retry complete.
func TestApproverRefusalMRTR(t *testing.T) {
	s := newStack(t, keysFor(t, approverKeys), "")
	const tool = "conformance-approval-approvers"
	args := map[string]any{}
	c := s.client(t, "ka", elicitCaps())
	r := c.call("tools/call", map[string]any{"name": tool, "arguments": args}, nil)
	keys, state := inputRequired(t, r)
	wantAnswerers(t, answerers(t, r.Result, keys[0]), false)
	approve := map[string]any{keys[0]: accept(map[string]any{"action": "accept"})}
	wantNotApprover(t, c.call("tools/call", retryParams(tool, args, approve, state), nil), keys[0])
	if n := s.resolutionsSignalled(t, keys[0][:strings.LastIndex(keys[0], "-i")]); n != 0 {
		t.Fatalf("the refused retry signalled %d resolutions", n)
	}

	listed := s.client(t, "kl", elicitCaps())
	r = listed.call("tools/call", map[string]any{"name": tool, "arguments": args}, nil)
	keys, state = inputRequired(t, r)
	wantAnswerers(t, answerers(t, r.Result, keys[0]), true)
	approve = map[string]any{keys[0]: accept(map[string]any{"action": "accept"})}
	if res := wantResult(t, listed.call("tools/call", retryParams(tool, args, approve, state), nil)); res["resultType"] != "complete" || res["isError"] == true {
		t.Fatalf("the approver's retry = %v", res)
	}
}

// TestApproverSessionNotAsked: a session-dialect client with elicitation that
// is no approver is not asked a question it may not answer (nor is a
// 2025-11-25 task's tasks/result): the call waits for the approvers and,
// at the bound, hands the run over saying who may answer; the question
// stays open and nothing was signalled.
func TestApproverSessionNotAsked(t *testing.T) {
	s := newStackWith(t, keysFor(t, approverKeys), "", func(o *Options) func(*Mount) {
		o.MaxBlockingWait = 2 * time.Second
		return nil
	})
	var asked atomic.Int32
	cs := authedSessionClient(t, s, "ka", "2025-11-25", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"action": "accept"}}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "conformance-approval-approvers", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	// The tool declares an output schema: the handoff at the bound is its
	// text alone.
	body := resultText(t, res)
	m := regexp.MustCompile(`^Run (\S+) of conformance-approval-approvers is waiting for an answer`).FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, "you may not answer it") || !strings.Contains(body, "openwop_run_status") {
		t.Fatalf("the call at the bound = %q, want a handoff saying who may answer", body)
	}
	still := struct{ RunID string }{m[1]}
	if n := asked.Load(); n != 0 {
		t.Fatalf("the client was asked %d times a question it may not answer", n)
	}
	snap, err := s.runs.Get(ctx, signals.Subject{Issuer: "test", Tenant: "acme", SubjectID: "urn:someone"}, still.RunID)
	if err != nil || len(snap.Interrupts) != 1 {
		t.Fatalf("the run after the call = %+v, %v", snap, err)
	}
	if n := s.resolutionsSignalled(t, still.RunID); n != 0 {
		t.Fatalf("%d resolutions signalled", n)
	}
}

// authedSessionClient is sessionClient authenticated with key.
func authedSessionClient(t *testing.T, s *stack, key, version string, answer func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return answer(r) }}
	c := mcp.NewClient(&mcp.Implementation{Name: "session-test", Version: "0"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hc := &http.Client{Transport: bearer{key: key, next: http.DefaultTransport}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// bearer adds an Authorization header to every request.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// TestCompanionSaysWhoMayAnswer: the companion status of a question shows
// who may answer it and whether the caller may, in its structured content
// and its text; a caller that may not is told to wait, not to answer.
func TestCompanionSaysWhoMayAnswer(t *testing.T) {
	s := newStack(t, keysFor(t, approverKeys), "")
	someone := modernCompanion(s.client(t, "ka", map[string]any{}))
	listed := modernCompanion(s.client(t, "kl", map[string]any{}))
	handoff := text(t, someone(t, "conformance-approval-approvers", map[string]any{}))
	if !strings.Contains(handoff, "you may not answer it: only its approvers "+conformancetools.ListedApprover+" may") ||
		!strings.Contains(handoff, "Next: call openwop_run_status") {
		t.Fatalf("handoff to a caller that may not answer = %q", handoff)
	}
	runID := strings.Fields(handoff)[1]
	for _, tc := range []struct {
		call companionCaller
		may  bool
	}{{someone, false}, {listed, true}} {
		res := tc.call(t, "openwop_run_status", map[string]any{"runId": runID})
		var st struct {
			Questions []struct {
				Answerers map[string]any `json:"answerers"`
			} `json:"questions"`
			Next string `json:"next"`
		}
		raw, _ := json.Marshal(res["structuredContent"])
		if err := json.Unmarshal(raw, &st); err != nil || len(st.Questions) != 1 {
			t.Fatalf("status = %s", raw)
		}
		wantAnswerers(t, st.Questions[0].Answerers, tc.may)
		if strings.HasPrefix(st.Next, "call openwop_run_answer") != tc.may {
			t.Fatalf("next for callerMay %v = %q", tc.may, st.Next)
		}
	}
}

// TestCompanionWaitFollowsQuestions: openwop_run_status with waitSeconds
// does not return at once while a question is open: it returns when the
// run's open questions change (one of multi_input's two answered by
// another caller; the approval answered by its approver, which ends the
// run), and otherwise at its bound.
func TestCompanionWaitFollowsQuestions(t *testing.T) {
	ctl, err := admission.New(admission.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newStackWith(t, keysFor(t, approverKeys), "", func(o *Options) func(*Mount) {
		o.Admission = ctl
		return nil
	})
	someone := modernCompanion(s.client(t, "ka", map[string]any{}))
	tasks := s.client(t, "kl", tasksCaps())

	// waitWhile calls the status tool with waitSeconds in the background,
	// does change once the call waits, and returns the call's status.
	waitWhile := func(t *testing.T, runID string, change func()) companionRun {
		t.Helper()
		done := make(chan map[string]any, 1)
		go func() { done <- someone(t, "openwop_run_status", map[string]any{"runId": runID, "waitSeconds": 60}) }()
		for ctl.Stats().Waiting == 0 {
			select {
			case res := <-done:
				t.Fatalf("the wait returned before anything changed: %v", res)
			case <-time.After(10 * time.Millisecond):
			}
		}
		change()
		select {
		case res := <-done:
			return companionStatus(t, res)
		case <-time.After(45 * time.Second):
			t.Fatal("the wait did not return when the questions changed")
		}
		return companionRun{}
	}

	t.Run("a question answered by another caller", func(t *testing.T) {
		runID := strings.Fields(text(t, someone(t, "multi_input", map[string]any{})))[1]
		first := companionStatus(t, someone(t, "openwop_run_status", map[string]any{"runId": runID}))
		if len(first.Questions) != 2 {
			t.Fatalf("multi_input's status = %+v", first)
		}
		q := first.Questions[0]
		var content map[string]any
		if strings.Contains(string(q.Schema), `"name"`) {
			content = map[string]any{"name": "Ada"}
		} else {
			content = map[string]any{"color": "red"}
		}
		st := waitWhile(t, runID, func() {
			wantResult(t, tasks.call("tasks/update", map[string]any{"taskId": runid.Project(runID),
				"inputResponses": map[string]any{q.Key: accept(content)}}, nil))
		})
		if st.Status != "input_required" || len(st.Questions) != 1 || st.Questions[0].Key == q.Key {
			t.Fatalf("the wait returned %+v, want the other question alone", st)
		}
	})
	t.Run("the approval answered by its approver", func(t *testing.T) {
		runID := strings.Fields(text(t, someone(t, "conformance-approval-approvers", map[string]any{})))[1]
		first := companionStatus(t, someone(t, "openwop_run_status", map[string]any{"runId": runID}))
		st := waitWhile(t, runID, func() {
			wantResult(t, tasks.call("tasks/update", map[string]any{"taskId": runid.Project(runID),
				"inputResponses": map[string]any{first.Questions[0].Key: accept(map[string]any{"action": "accept"})}}, nil))
		})
		if st.Status != "completed" {
			t.Fatalf("the wait returned %+v, want the run completed", st)
		}
	})
	t.Run("nothing changes: the bound", func(t *testing.T) {
		runID := strings.Fields(text(t, someone(t, "conformance-approval-approvers", map[string]any{})))[1]
		start := time.Now()
		st := companionStatus(t, someone(t, "openwop_run_status", map[string]any{"runId": runID, "waitSeconds": 2}))
		if waited := time.Since(start); waited < 2*time.Second || st.Status != "input_required" || len(st.Questions) != 1 {
			t.Fatalf("after %v the wait returned %+v, want the question still open at the 2 s bound", waited, st)
		}
	})
}

// TestApproverTaskResultNotAsked: a 2025-11-25 task's tasks/result does
// not carry, as elicitation/create, a question the caller may not answer:
// it waits for the approver (here through the run service, as REST does),
// and the next message on the stream is the task's result.
func TestApproverTaskResultNotAsked(t *testing.T) {
	s := newStack(t, nil, "")
	someone := signals.Subject{Issuer: "test", Tenant: "acme", SubjectID: "urn:someone"}
	listed := signals.Subject{Issuer: "test", Tenant: "acme", SubjectID: conformancetools.ListedApprover}
	peer := serveStdio(t, s.mount, someone)
	send := func(v any) {
		t.Helper()
		b, _ := json.Marshal(v)
		peer.send(t, b)
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{"elicitation": map[string]any{}},
		"clientInfo": map[string]any{"name": "t", "version": "0"}}})
	peer.response(t)
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{
		"name": "conformance-approval-approvers", "arguments": map[string]any{}, "task": map[string]any{}}})
	created := peer.response(t)
	tk, _ := created["result"].(map[string]any)["task"].(map[string]any)
	if tk == nil {
		t.Fatalf("tools/call = %v", created)
	}
	id := tk["taskId"].(string)
	runID, _ := runid.Parse(id)
	ctx := context.Background()
	snap, err := s.runs.Await(ctx, someone, runID, func(s signals.Snapshot) bool { return len(s.Interrupts) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	send(map[string]any{"jsonrpc": "2.0", "id": "result", "method": "tasks/result", "params": map[string]any{"taskId": id}})
	if _, err := s.runs.Resolve(ctx, listed, runID, signals.Resolution{InterruptID: snap.Interrupts[0].ID,
		Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"accept"}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-peer.msgs:
		if msg["id"] != "result" || msg["result"] == nil {
			t.Fatalf("the first message after tasks/result = %v, want its result (no elicitation/create)", msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tasks/result did not answer after the approver's answer")
	}
}
