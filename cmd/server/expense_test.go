package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/oauth2"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/testing/oidctest"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// expenseStack is the assembled server (MCP, REST, OAuth with a groups
// claim) serving the example tools on the embedded Temporal, its booking
// slow enough to watch and to cancel.
type expenseStack struct {
	*permStack
	temporal client.Client
}

func startExpenseStack(t *testing.T) *expenseStack {
	t.Helper()
	addr := freeAddr(t)
	base := "http://" + addr
	p := oidctest.Start(t, oidctest.Options{Audience: []string{base + auth.ResourcePath}})
	o, err := auth.NewOAuth(auth.OAuthOptions{Issuers: []string{p.Issuer}, Resource: base + auth.ResourcePath,
		TenantClaim: "tenant", GroupsClaim: "groups", RequiredScopes: []string{"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	acts := tools.NewActivities(testenv.Logger(), tools.ActivityOptions{HeartbeatInterval: 100 * time.Millisecond,
		SectionDelay: 10 * time.Millisecond, BookingDelay: 700 * time.Millisecond})
	reg, err := tools.DefaultRegistry(acts)
	if err != nil {
		t.Fatal(err)
	}
	s := &permStack{oauthServer: &oauthServer{base: base, oauth: o}, provider: p, trail: &trailBuffer{}}
	srv, err := app.NewServer(app.ServerOptions{Registry: reg, Authenticate: o.Authenticator(nil), OAuth: o,
		PublicURL: base, Worker: true})
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Temporal(t)
	cfg := config.Config{HTTPAddr: addr, TaskQueue: testenv.UniqueTaskQueue(t), Worker: true, Remote: true,
		Client: client.Options{HostPort: env.Address, Namespace: env.Namespace}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.Start(ctx, cfg, testenv.Logger(), srv.Parts())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	select {
	case <-o.Ready(p.Issuer):
	case <-time.After(30 * time.Second):
		t.Fatalf("issuer not ready: %v", o.Unreachable())
	}
	return &expenseStack{permStack: s, temporal: env.Client}
}

// as is an HTTP client whose requests carry token.
func as(token string) *http.Client {
	return &http.Client{Transport: &oauth2.Transport{Source: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token})},
		Timeout: 30 * time.Second}
}

// expenseTask is what the tests read of a task.
type expenseTask struct {
	Status        string                     `json:"status"`
	StatusMessage string                     `json:"statusMessage"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	Result        *struct {
		StructuredContent tools.ApproveExpenseOutput `json:"structuredContent"`
	} `json:"result"`
}

// getTask polls tasks/get as hc until ok holds of the task (at most 60 s).
func (s *expenseStack) getTask(t *testing.T, hc *http.Client, id string, ok func(expenseTask) bool) expenseTask {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		var tk expenseTask
		r := oauthRPC(ctx, t, hc, s.base+"/mcp", "tasks/get", id, map[string]any{"taskId": id})
		if err := json.Unmarshal(r.Result, &tk); err != nil {
			t.Fatalf("task %s: %v", r.Result, err)
		}
		if ok(tk) {
			return tk
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s: %+v, never what the test waits for", id, tk)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// closed waits until Temporal reports the task's workflow closed with
// status want: the run did not hang in its cancellation.
func (s *expenseStack) closed(t *testing.T, id string, want enumspb.WorkflowExecutionStatus) {
	t.Helper()
	wid, err := runid.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := s.temporal.DescribeWorkflowExecution(context.Background(), wid, "")
		if err != nil {
			t.Fatal(err)
		}
		st := d.WorkflowExecutionInfo.GetStatus()
		if st == want {
			return
		}
		if st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || time.Now().After(deadline) {
			t.Fatalf("workflow %s is %s, want %s", wid, st, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// accept is a tasks/update answer accepting the approval key.
func accept(id, key string) map[string]any {
	return map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}}}}
}

// onlyKey is the one key of a task's inputRequests ("" unless exactly one).
func onlyKey(tk expenseTask) string {
	if len(tk.InputRequests) != 1 {
		return ""
	}
	for k := range tk.InputRequests {
		return k
	}
	return ""
}

// TestApproveExpenseWire runs approve_expense on the assembled server with
// real callers: a manager's question unanswered within its deadline is
// gone from inputRequests at the next tasks/get and a director's is open
// instead; the manager's late answer resolves nothing (tasks/update acks
// and ignores it, REST refuses it 409 interrupt_expired, with or without
// its interruptId); the director's answer decides, the booking's progress
// shows in tasks/get, and the result is typed. A cancellation before the
// deadline, after the escalation or while booking closes the run.
func TestApproveExpenseWire(t *testing.T) {
	s := startExpenseStack(t)
	alice := as(s.token(t, "alice-1", "acme", nil, "mcp"))
	maria := as(s.token(t, "maria-1", "acme", []string{"managers"}, "mcp"))
	dora := as(s.token(t, "dora-1", "acme", []string{"directors"}, "mcp"))
	mcp := s.base + "/mcp"
	ctx := context.Background()
	start := func(t *testing.T, escalateAfter int) string {
		return startTask(ctx, t, alice, mcp, "approve_expense",
			map[string]any{"amount": 120.5, "purpose": "team dinner", "escalateAfterSeconds": escalateAfter})
	}
	waiting := func(tk expenseTask) bool { return tk.Status == "input_required" && onlyKey(tk) != "" }
	// The director's question (the run's second, <runId>-i2) is the only
	// one open: the manager's (<runId>-i1) is gone.
	escalated := func(tk expenseTask) bool { return waiting(tk) && strings.HasSuffix(onlyKey(tk), "-i2") }

	t.Run("escalation", func(t *testing.T) {
		id := start(t, 2)
		director := onlyKey(s.getTask(t, alice, id, escalated))
		manager := strings.TrimSuffix(director, "2") + "1"

		// The manager answers late.
		if r := oauthRPC(ctx, t, maria, mcp, "tasks/update", id, accept(id, manager)); !strings.Contains(string(r.Result), `"complete"`) {
			t.Fatalf("tasks/update of the expired question: %s, want the empty ack", r.Result)
		}
		answer := s.base + "/runs/" + id + "/interrupts/manager"
		for _, body := range []string{`{"resumeValue":{"action":"accept"},"interruptId":"` + manager + `"}`, `{"resumeValue":{"action":"accept"}}`} {
			if resp, got := send(t, http.MethodPost, answer, s.token(t, "maria-1", "acme", []string{"managers"}, "mcp"), body); resp.StatusCode != http.StatusConflict ||
				!strings.Contains(got, "interrupt_expired") {
				t.Fatalf("REST answer %s to the expired question: %d %s, want 409 interrupt_expired", body, resp.StatusCode, got)
			}
		}
		if tk := s.getTask(t, alice, id, func(expenseTask) bool { return true }); !waiting(tk) || onlyKey(tk) != director {
			t.Fatalf("after the late answers: %+v, want only the director's question open", tk)
		}

		oauthRPC(ctx, t, dora, mcp, "tasks/update", id, accept(id, director))
		booking := s.getTask(t, alice, id, func(tk expenseTask) bool {
			return tk.Status == "working" && strings.Contains(tk.StatusMessage, "book (")
		})
		done := s.getTask(t, alice, id, func(tk expenseTask) bool { return tk.Status == "completed" })
		out := done.Result.StructuredContent
		if !out.Approved || !out.Escalated || out.DecidedBy != "dora-1" || out.BookingRef == "" {
			t.Fatalf("result %+v (booking showed %q), want approved by the director after the escalation", out, booking.StatusMessage)
		}
	})

	cancels := []struct {
		name  string
		setup func(t *testing.T) string // starts a run and brings it to the point
	}{
		{"before the deadline", func(t *testing.T) string {
			id := start(t, 600)
			tk := s.getTask(t, alice, id, waiting)
			// The question says when it expires, and that alice may not answer it.
			var req struct {
				Params struct {
					Meta struct {
						ExpiresAt time.Time `json:"io.openwop/expiresAt"`
						Answerers struct {
							CallerMay bool `json:"callerMay"`
						} `json:"io.openwop/answerers"`
					} `json:"_meta"`
				} `json:"params"`
			}
			if err := json.Unmarshal(tk.InputRequests[onlyKey(tk)], &req); err != nil || req.Params.Meta.ExpiresAt.IsZero() ||
				req.Params.Meta.Answerers.CallerMay || time.Until(req.Params.Meta.ExpiresAt) > 600*time.Second {
				t.Fatalf("the manager's question %s: want its _meta expiresAt within 600 s and callerMay false", tk.InputRequests[onlyKey(tk)])
			}
			return id
		}},
		{"after the escalation", func(t *testing.T) string {
			id := start(t, 1)
			s.getTask(t, alice, id, escalated)
			return id
		}},
		{"while booking", func(t *testing.T) string {
			id := start(t, 600)
			oauthRPC(ctx, t, maria, mcp, "tasks/update", id, accept(id, onlyKey(s.getTask(t, alice, id, waiting))))
			s.getTask(t, alice, id, func(tk expenseTask) bool { return strings.Contains(tk.StatusMessage, "book (") })
			return id
		}},
	}
	for _, tt := range cancels {
		t.Run("cancel "+tt.name, func(t *testing.T) {
			id := tt.setup(t)
			oauthRPC(ctx, t, alice, mcp, "tasks/cancel", id, map[string]any{"taskId": id})
			s.closed(t, id, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED)
			if tk := s.getTask(t, alice, id, func(expenseTask) bool { return true }); tk.Status != "cancelled" || len(tk.InputRequests) != 0 {
				t.Fatalf("after the cancel: %+v, want cancelled with no question", tk)
			}
		})
	}
}
