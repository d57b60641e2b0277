package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/workflows"
)

// The secrets of the audited session: the API keys, a refused key, the
// tool's argument and the answer. None may appear in the audit trail.
const (
	auditKeyA      = "audit-key-alice-5e1c7"
	auditKeyB      = "audit-key-bob-9a04f"
	auditBadKey    = "audit-key-forged-77d2"
	auditArgument  = "argument-secret-31f8"
	auditAnswer    = "answer-secret-c26b"
	auditToolName  = "audited_question"
	auditAnswerKey = "reply"
)

type auditedIn struct {
	Note string `json:"note"`
}

type auditedOut struct {
	Echo string `json:"echo"`
}

// audited asks one question and answers the note and the reply.
func audited(ctx workflow.Context, in auditedIn) (auditedOut, error) {
	raw, err := workflows.AskInput(ctx, workflows.InputRequest{Key: auditAnswerKey, Title: "Reply?",
		Schema: json.RawMessage(`{"type":"object","properties":{"reply":{"type":"string"}}}`)})
	if err != nil {
		return auditedOut{}, err
	}
	return auditedOut{Echo: in.Note + " " + string(raw)}, nil
}

// lockedBuffer is the audit trail's sink in the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Sync() error { return nil }

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// auditStack is a server assembled as cmd/server assembles it, with API
// keys of two tenants and its audit trail in a buffer.
type auditStack struct {
	t                *testing.T
	addr             string
	env              *testenv.Env
	trail            *lockedBuffer
	tenantA, tenantB string
}

func startAuditStack(t *testing.T) *auditStack {
	t.Helper()
	env := testenv.Temporal(t)
	s := &auditStack{t: t, env: env, trail: &lockedBuffer{},
		tenantA: testenv.UniqueID("audit-a-"), tenantB: testenv.UniqueID("audit-b-")}
	keys, err := auth.New([]auth.Key{
		{Key: auditKeyA, Tenant: s.tenantA, Subject: "urn:test:alice"},
		{Key: auditKeyB, Tenant: s.tenantB, Subject: "urn:test:bob"},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool(auditToolName, "Ask one question.", audited, workflows.Suspends()),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := app.NewServer(app.ServerOptions{Registry: reg, Authenticate: keys.Authenticate,
		Audit: audit.New(zapcore.AddSync(s.trail)), Worker: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := app.Start(ctx, remoteConfig(t, env), testenv.Logger(), srv.Parts())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	s.addr = a.HTTPAddr
	return s
}

// mcp sends one 2026-07-28 request with the Tasks extension declared and
// returns its HTTP status and JSON-RPC answer.
func (s *auditStack) mcp(key, method, name string, params map[string]any) (int, map[string]any) {
	s.t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return s.do(req)
}

// rest sends one REST request and returns its status and JSON body.
func (s *auditStack) rest(key, method, path, body string) (int, map[string]any) {
	s.t.Helper()
	req, _ := http.NewRequest(method, "http://"+s.addr+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return s.do(req)
}

func (s *auditStack) do(req *http.Request) (int, map[string]any) {
	s.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if i := bytes.Index(raw, []byte("data: ")); i >= 0 { // an SSE answer
		raw = raw[i+len("data: "):]
	}
	var m map[string]any
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&m); err != nil {
		s.t.Fatalf("%s %s: %d %q: %v", req.Method, req.URL.Path, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, m
}

// waitAsked polls tasks/get until the task asks its question, and
// returns the question's key (its interrupt id).
func (s *auditStack) waitAsked(task string) string {
	s.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, r := s.mcp(auditKeyA, "tasks/get", task, map[string]any{"taskId": task})
		res, _ := r["result"].(map[string]any)
		reqs, _ := res["inputRequests"].(map[string]any)
		for k := range reqs {
			return k
		}
	}
	s.t.Fatalf("task %s never asked its question", task)
	return ""
}

// records parses the trail: one JSON object per line.
func (s *auditStack) records() []map[string]string {
	s.t.Helper()
	var out []map[string]string
	sc := bufio.NewScanner(bytes.NewReader(s.trail.Bytes()))
	for sc.Scan() {
		var rec map[string]string
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			s.t.Fatalf("audit line %q is not a JSON object of strings: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

// TestAuditTrail runs a session on the assembled server against the real
// Temporal server: a start and an answer over MCP, a start and a
// cancellation over REST, a refused key, a request without one, and
// another tenant reading, answering and cancelling a task. Each leaves
// exactly one audit record, checked field by field; the trail holds none
// of the keys, the argument or the answer. The acting subjects are in
// the runs' histories.
func TestAuditTrail(t *testing.T) {
	s := startAuditStack(t)
	_, r := s.mcp(auditKeyA, "tools/call", auditToolName, map[string]any{"name": auditToolName, "arguments": map[string]any{"note": auditArgument}})
	res, _ := r["result"].(map[string]any)
	task, _ := res["taskId"].(string)
	first, err := runid.Parse(task)
	if err != nil {
		t.Fatalf("tools/call = %v, want a created task", r)
	}
	question := s.waitAsked(task)
	// Tenant B names tenant A's task: refused on each method.
	for _, m := range []struct {
		method string
		params map[string]any
	}{
		{"tasks/get", map[string]any{"taskId": task}},
		{"tasks/update", map[string]any{"taskId": task, "inputResponses": map[string]any{question: map[string]any{"action": "accept"}}}},
		{"tasks/cancel", map[string]any{"taskId": task}},
	} {
		if _, r := s.mcp(auditKeyB, m.method, task, m.params); r["error"] == nil {
			t.Fatalf("%s of another tenant's task = %v, want an error", m.method, r)
		}
	}
	_, r = s.mcp(auditKeyA, "tasks/update", task, map[string]any{"taskId": task,
		"inputResponses": map[string]any{question: map[string]any{"action": "accept", "content": map[string]any{"reply": auditAnswer}}}})
	if r["error"] != nil {
		t.Fatalf("tasks/update = %v", r)
	}
	// A second run over REST, cancelled.
	code, body := s.rest(auditKeyA, "POST", "/runs", fmt.Sprintf(`{"workflowId":%q,"inputs":{"note":%q}}`, auditToolName, auditArgument))
	second, _ := body["runId"].(string)
	if code != http.StatusCreated || !runid.Valid(second) {
		t.Fatalf("POST /runs = %d %v", code, body)
	}
	if code, body := s.rest(auditKeyA, "POST", "/runs/"+runid.Project(second)+"/cancel", `{}`); code != http.StatusOK && code != http.StatusAccepted {
		t.Fatalf("cancel = %d %v", code, body)
	}
	// Refused credentials.
	if code, _ := s.rest(auditBadKey, "GET", "/runs", ""); code != http.StatusUnauthorized {
		t.Fatalf("GET /runs with a forged key = %d, want 401", code)
	}
	if code, _ := s.mcp("", "tools/list", "", map[string]any{}); code != http.StatusUnauthorized {
		t.Fatalf("tools/list without a key = %d, want 401", code)
	}

	const apiKey = auth.IssuerAPIKey
	alice := map[string]string{"tenant": s.tenantA, "issuer": apiKey, "subject": "urn:test:alice"}
	bob := map[string]string{"tenant": s.tenantB, "issuer": apiKey, "subject": "urn:test:bob"}
	with := func(who map[string]string, fields ...string) map[string]string {
		m := map[string]string{}
		for k, v := range who {
			m[k] = v
		}
		for i := 0; i+1 < len(fields); i += 2 {
			m[fields[i]] = fields[i+1]
		}
		return m
	}
	refusedB := func(action string) map[string]string {
		return with(bob, "action", action, "outcome", "refused", "reason", "tenant-mismatch", "runId", first)
	}
	want := []map[string]string{
		with(alice, "action", "start", "outcome", "ok", "runId", first, "tool", auditToolName, "transport", "mcp"),
		refusedB("read"), // tasks/get
		refusedB("read"), // tasks/update reads the task first
		with(bob, "action", "cancel", "outcome", "refused", "reason", "tenant-mismatch", "runId", first, "cancelReason", "caller-requested"),
		with(alice, "action", "answer", "outcome", "ok", "runId", first, "tool", auditToolName, "interruptId", question, "resolution", "accept"),
		with(alice, "action", "start", "outcome", "ok", "runId", second, "tool", auditToolName, "transport", "rest"),
		with(alice, "action", "cancel", "outcome", "ok", "runId", second, "tool", auditToolName, "cancelReason", "caller-requested"),
		{"action": "authenticate", "outcome": "refused", "reason": "invalid-credential"},
		{"action": "authenticate", "outcome": "refused", "reason": "missing-credential"},
	}
	got := s.records()
	if len(got) != len(want) {
		t.Fatalf("%d audit records, want %d:\n%s", len(got), len(want), s.trail.Bytes())
	}
	for i, rec := range got {
		at, err := time.Parse(time.RFC3339Nano, rec["time"])
		if err != nil || time.Since(at) > 5*time.Minute || at.Location() != time.UTC {
			t.Errorf("record %d: time %q is not a recent UTC RFC 3339 time", i, rec["time"])
		}
		delete(rec, "time")
		if want[i]["action"] == "authenticate" {
			if !strings.HasPrefix(rec["remote"], "127.0.0.1:") {
				t.Errorf("record %d: remote %q, want the loopback client", i, rec["remote"])
			}
			delete(rec, "remote")
		}
		if fmt.Sprint(rec) != fmt.Sprint(want[i]) {
			t.Errorf("record %d:\n got %v\nwant %v", i, rec, want[i])
		}
	}
	for _, secret := range []string{auditKeyA, auditKeyB, auditBadKey, auditArgument, auditAnswer} {
		if bytes.Contains(s.trail.Bytes(), []byte(secret)) {
			t.Errorf("the audit trail holds %q:\n%s", secret, s.trail.Bytes())
		}
	}
	s.checkHistories(first, second)
}

// checkHistories reads the runs' histories from Temporal: the starter is
// the start's owner, the answer's resolvedBy is alice, and the
// cancellation names her twice, in its cancelReason signal and as the
// cause of the cancellation request.
func (s *auditStack) checkHistories(answered, cancelled string) {
	t := s.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := signals.Subject{Issuer: auth.IssuerAPIKey, SubjectID: "urn:test:alice", Tenant: s.tenantA, Kind: "api-key"}
	dc := converter.GetDefaultDataConverter()
	for _, id := range []string{answered, cancelled} {
		// Until the run closes, an event that came while a workflow task
		// ran (the cancel request just after the cancel-reason signal) is
		// buffered and not yet in the history read.
		_ = s.env.Client.GetWorkflow(ctx, id, "").Get(ctx, nil)
		var starter, resolver, canceller, cause *signals.Subject
		it := s.env.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", id, err)
			}
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				var req signals.StartRequest
				if err := dc.FromPayloads(ev.GetWorkflowExecutionStartedEventAttributes().GetInput(), &req); err != nil {
					t.Fatal(err)
				}
				starter = &req.Owner.Subject
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
				a := ev.GetWorkflowExecutionSignaledEventAttributes()
				switch a.GetSignalName() {
				case signals.SignalResolveInterrupt:
					var res signals.Resolution
					if err := dc.FromPayloads(a.GetInput(), &res); err != nil {
						t.Fatal(err)
					}
					resolver = &res.ResolvedBy
				case signals.SignalCancelReason:
					var req signals.CancelRequest
					if err := dc.FromPayloads(a.GetInput(), &req); err != nil {
						t.Fatal(err)
					}
					canceller = &req.CancelledBy
				}
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
				var req signals.CancelRequest
				if err := json.Unmarshal([]byte(ev.GetWorkflowExecutionCancelRequestedEventAttributes().GetCause()), &req); err != nil {
					t.Fatalf("cancel request cause of %s: %v", id, err)
				}
				cause = &req.CancelledBy
			}
		}
		check := func(what string, got *signals.Subject, present bool) {
			switch {
			case !present && got != nil:
				t.Errorf("run %s: unexpected %s %+v", id, what, *got)
			case present && (got == nil || !reflect.DeepEqual(*got, alice)):
				t.Errorf("run %s: %s = %+v, want %+v", id, what, got, alice)
			}
		}
		check("starter", starter, true)
		check("resolvedBy", resolver, id == answered)
		check("cancelReason's cancelledBy", canceller, id == cancelled)
		check("cancel request cause's cancelledBy", cause, id == cancelled)
	}
}
