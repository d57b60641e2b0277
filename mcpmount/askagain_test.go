package mcpmount

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// These tests prove, on the wire against a real worker on the embedded
// Temporal server, that no answer is lost while a question is asked
// again: a tool asks for approval in a loop (review_loop: "approve?",
// rejected, ask again after reaskDelay), each ask with its own author key
// ("review-1", "review-2") at one node ("review", the enclosing Step), so
// each has its own key on the wire (<runId>-i1, <runId>-i2).

// reaskDelay is how long review_loop works between a rejection and the
// next ask.
const reaskDelay = 300 * time.Millisecond

// askAgainWindow is the read window of the stack's run service: long
// enough that the reading it keeps after the first answer (the run
// working, no question open) is still held when the second ask is
// answered, as under load, when readings are kept for as long as they
// took (up to 4 s).
const askAgainWindow = 3 * time.Second

// reviewLoop asks for approval until it is given (at most three times)
// and answers the round that approved.
func reviewLoop(ctx workflow.Context, _ struct{}) (map[string]any, error) {
	return workflows.Step(ctx, "review", func(ctx workflow.Context) (map[string]any, error) {
		for round := 1; round <= 3; round++ {
			d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: fmt.Sprintf("review-%d", round), Title: "Approve the plan?"})
			if err != nil {
				return nil, err
			}
			if d.Approved {
				return map[string]any{"round": round}, nil
			}
			if err := workflow.Sleep(ctx, reaskDelay); err != nil {
				return nil, err
			}
		}
		return map[string]any{"round": 0}, nil
	})
}

// askAgainStack is a mount and a REST API over one run service (whose
// read window is askAgainWindow) and a second run service, another
// replica of the server, that keeps no reading.
type askAgainStack struct {
	mcp, rest string
	other     *runs.Service
}

func newAskAgainStack(t *testing.T) *askAgainStack {
	t.Helper()
	env := testenv.Temporal(t)
	reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("review_loop", "Ask for approval until given.", reviewLoop)})
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	env.NewWorker(t, tq, reg.Register)
	svc := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace, ReadWindow: askAgainWindow})
	cat := staticCatalog(t, reg.Specs()...)
	m, err := New(Options{Runs: svc, Catalog: cat, Logger: env.Logger, PollInterval: 200 * time.Millisecond, InlineWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	api, err := restapi.New(restapi.Options{Runs: svc, Catalog: cat, Authenticate: auth.AnonymousAuthenticator, Logger: env.Logger})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", m)
	mux.Handle("/", api)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	other := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace, ReadWindow: -1})
	return &askAgainStack{mcp: srv.URL + "/mcp", rest: srv.URL, other: other}
}

// openAsk waits, reading the run on the other replica, until the question
// of round is open, and returns the run as read there.
func (s *askAgainStack) openAsk(t *testing.T, runID string, round int) (signals.Snapshot, signals.Interrupt) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap, err := s.other.Get(context.Background(), auth.Anonymous(), runID)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range snap.Interrupts {
			if it.Key == fmt.Sprintf("review-%d", round) {
				return snap, it
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("question %d not open within 10 s: run %s, open %+v", round, snap.Status, snap.Interrupts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restAnswer posts an answer to the question at node "review" of the run
// and returns the HTTP status and body.
func (s *askAgainStack) restAnswer(t *testing.T, runID string, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(s.rest+"/runs/"+url.PathEscape(runID)+"/interrupts/review", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// wantRound waits until the run completed and fails unless the round that
// approved is round, and the run's log resolved each question once.
func (s *askAgainStack) wantRound(t *testing.T, runID string, round int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap, err := s.other.Get(context.Background(), auth.Anonymous(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Status.Terminal() {
			got := ""
			if snap.Result != nil {
				got = string(snap.Result.StructuredContent)
			}
			if snap.Status != signals.StatusCompleted || !strings.Contains(got, fmt.Sprintf(`"round":%d`, round)) {
				t.Fatalf("run ended %s with %s, want completed in round %d", snap.Status, got, round)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still %s 10 s on, open %+v: an answer was lost", snap.Status, snap.Interrupts)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAskAgainAnswerApplied: the first ask is rejected over tasks/update;
// the second, learned of from another replica the moment it is published,
// is answered through each entry path of the replica that applied the
// first answer, whose last reading of the run (working, no question open)
// predates the second ask. The answer is applied, and the run completes in
// round 2; before, tasks/update acknowledged it and applied nothing (the
// question stayed open forever), and REST refused it 404.
func TestAskAgainAnswerApplied(t *testing.T) {
	s := newAskAgainStack(t)
	tests := []struct {
		name   string
		answer func(t *testing.T, c *client, taskID, runID string, it signals.Interrupt)
	}{
		{"tasks/update", func(t *testing.T, c *client, taskID, _ string, it signals.Interrupt) {
			wantResult(t, c.call("tasks/update", map[string]any{"taskId": taskID,
				"inputResponses": map[string]any{it.ID: accept(map[string]any{"action": "accept"})}}, nil))
		}},
		{"REST by node", func(t *testing.T, _ *client, _, runID string, _ signals.Interrupt) {
			if code, body := s.restAnswer(t, runID, `{"resumeValue":{"action":"accept"}}`); code != http.StatusOK {
				t.Fatalf("REST answer to the open second ask = %d %s, want 200", code, body)
			}
		}},
		{"REST naming the interrupt", func(t *testing.T, _ *client, _, runID string, it signals.Interrupt) {
			if code, body := s.restAnswer(t, runID, `{"interruptId":"`+it.ID+`","resumeValue":{"action":"accept"}}`); code != http.StatusOK {
				t.Fatalf("REST answer to the open second ask = %d %s, want 200", code, body)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &client{t: t, url: s.mcp, caps: tasksCaps()}
			taskID := callTool(t, c, "review_loop", map[string]any{})["taskId"].(string)
			runID := runOf(t, taskID)
			_, first := s.openAsk(t, runID, 1)
			wantResult(t, c.call("tasks/update", map[string]any{"taskId": taskID,
				"inputResponses": map[string]any{first.ID: accept(map[string]any{"action": "reject"})}}, nil))
			_, second := s.openAsk(t, runID, 2)
			if second.ID == first.ID || second.NodeID != first.NodeID {
				t.Fatalf("asks %+v and %+v: want two keys on the wire at one node", first, second)
			}
			tt.answer(t, c, taskID, runID, second)
			s.wantRound(t, runID, 2)
		})
	}
}

// TestAskAgainLateAnswer: an answer meant for the first ask that arrives
// once the second is open (a retry, a second approver) is never applied to
// the second: over tasks/update it names the first ask's key, which is
// answered, and resolves nothing (MCP ignores keys not open); over REST it
// names the first ask's interrupt and is refused 409
// interrupt_already_resolved. A refused answer to the second ask leaves it
// open; the answer that fits is then applied, and the run completes in
// round 2.
func TestAskAgainLateAnswer(t *testing.T) {
	s := newAskAgainStack(t)
	c := &client{t: t, url: s.mcp, caps: tasksCaps()}
	taskID := callTool(t, c, "review_loop", map[string]any{})["taskId"].(string)
	runID := runOf(t, taskID)
	_, first := s.openAsk(t, runID, 1)
	reject := map[string]any{first.ID: accept(map[string]any{"action": "reject"})}
	wantResult(t, c.call("tasks/update", map[string]any{"taskId": taskID, "inputResponses": reject}, nil))
	_, second := s.openAsk(t, runID, 2)

	late := []struct {
		name string
		send func(t *testing.T)
	}{
		{"tasks/update naming the first ask", func(t *testing.T) {
			wantResult(t, c.call("tasks/update", map[string]any{"taskId": taskID,
				"inputResponses": map[string]any{first.ID: accept(map[string]any{"action": "accept"})}}, nil))
		}},
		{"REST naming the first ask", func(t *testing.T) {
			code, body := s.restAnswer(t, runID, `{"interruptId":"`+first.ID+`","resumeValue":{"action":"accept"}}`)
			if code != http.StatusConflict || !strings.Contains(body, "interrupt_already_resolved") {
				t.Fatalf("REST answer to the answered first ask = %d %s, want 409 interrupt_already_resolved", code, body)
			}
		}},
		{"refused answer to the second ask", func(t *testing.T) {
			r := c.call("tasks/update", map[string]any{"taskId": taskID,
				"inputResponses": map[string]any{second.ID: accept(map[string]any{"action": "maybe"})}}, nil)
			wantRefusal(t, r, second.ID, `"maybe" is not offered`)
		}},
	}
	for _, tt := range late {
		t.Run(tt.name, func(t *testing.T) {
			tt.send(t)
			snap, _ := s.openAsk(t, runID, 2)
			if len(snap.Resolved) != 1 || snap.Resolved[0].InterruptID != first.ID || approvalAction(snap.Resolved[0].Resolution) != "reject" {
				t.Fatalf("after the late answer the run resolved %+v, want only the first ask, rejected", snap.Resolved)
			}
		})
	}
	wantResult(t, c.call("tasks/update", map[string]any{"taskId": taskID,
		"inputResponses": map[string]any{second.ID: accept(map[string]any{"action": "accept"})}}, nil))
	s.wantRound(t, runID, 2)
}

// approvalAction is the approval action a resolution chose ("reject" for
// a decline).
func approvalAction(r signals.Resolution) string {
	if r.Action == signals.ActionDecline {
		return "reject"
	}
	if strings.Contains(string(r.Content), `"reject"`) {
		return "reject"
	}
	return "accept"
}

// TestAskAgainMRTR: a blocking call of a client without tasks (MRTR)
// rejects the first ask in a retry; the server follows the run to its
// second ask and answers it InputRequiredResult, and the next retry's
// answer to it is applied: the run completes in round 2. (The follow that
// saw the second ask dropped the reading kept after the first answer, so
// this path held before runs.Showing too; the test keeps it so.)
func TestAskAgainMRTR(t *testing.T) {
	s := newAskAgainStack(t)
	c := &client{t: t, url: s.mcp, caps: elicitCaps()}
	args := map[string]any{}
	keys, state := inputRequired(t, c.call("tools/call", map[string]any{"name": "review_loop", "arguments": args}, nil))
	reject := map[string]any{keys[0]: accept(map[string]any{"action": "reject"})}
	again, state := inputRequired(t, c.call("tools/call", retryParams("review_loop", args, reject, state), nil))
	if len(again) != 1 || again[0] == keys[0] || !strings.HasSuffix(again[0], "-i2") {
		t.Fatalf("after the rejection the call asks %v, want the second ask", again)
	}
	approve := map[string]any{again[0]: accept(map[string]any{"action": "accept"})}
	res := wantResult(t, c.call("tools/call", retryParams("review_loop", args, approve, state), nil))
	if got := resultOf(t, res); res["resultType"] != "complete" || !strings.Contains(got, `"round":2`) {
		t.Fatalf("the retry answering the second ask = %v, want the run completed in round 2", res)
	}
}
