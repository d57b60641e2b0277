package mcpmount

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// These tests prove, on the wire against real workers on the embedded
// Temporal server, that a run whose cancellation was requested but whose
// code does not honour it reads as still working (cancelling) for as long
// as Temporal has it open, stays cancellable, and reads cancelled only once
// it closed: for a tool of the workflows library and for a plain workflow.

// stubbornTool is a tool that ignores its cancellation: it waits on a
// context the cancellation does not reach, for ever.
func stubbornTool(ctx workflow.Context, _ struct{}) (string, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	return "", workflow.Await(dctx, func() bool { return false })
}

// stubbornPlain is a plain workflow that ignores its cancellation.
func stubbornPlain(ctx workflow.Context, _ map[string]any) (map[string]any, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	return nil, workflow.Await(dctx, func() bool { return false })
}

// cancellingStack is a mount and the REST API over one run service, with a
// worker of stubborn (a tool) and stubborn_plain (a plain workflow).
type cancellingStack struct {
	env       *testenv.Env
	mcp, rest string
	svc       *runs.Service
}

func newCancellingStack(t *testing.T) *cancellingStack {
	t.Helper()
	env := testenv.Temporal(t)
	reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("stubborn", "Ignores its cancellation.", stubbornTool)})
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	env.NewWorker(t, tq, func(r worker.Registry) {
		reg.Register(r)
		r.RegisterWorkflowWithOptions(stubbornPlain, workflow.RegisterOptions{Name: "StubbornPlain"})
	})
	specs := append(reg.Specs(), signals.ToolSpec{Name: "stubborn_plain", Description: "A plain workflow that ignores its cancellation.",
		InputSchema: json.RawMessage(`{"type":"object"}`), TaskSupport: signals.TaskOptional, WorkflowType: "StubbornPlain", Contract: signals.ContractPlain})
	svc := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
	cat := staticCatalog(t, specs...)
	m, err := New(Options{Runs: svc, Catalog: cat, Logger: env.Logger, PollInterval: 200 * time.Millisecond})
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
	return &cancellingStack{env: env, mcp: srv.URL + "/mcp", rest: srv.URL, svc: svc}
}

// restRun sends a REST request about run id and decodes its JSON answer.
func (s *cancellingStack) restRun(t *testing.T, method, id, suffix string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, s.rest+"/runs/"+url.PathEscape(id)+suffix, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %v in %s", method, suffix, err, raw)
	}
	return resp.StatusCode, out
}

// cancellingMessage reports whether a task reads as a run whose
// cancellation was requested (and when) and that has not closed.
func cancellingMessage(r map[string]any) bool {
	msg, _ := r["statusMessage"].(string)
	return r["status"] == "working" && strings.HasPrefix(msg, "cancellation requested under a minute ago; the run has not closed yet")
}

// TestCancellingUntilClosed: a run whose tool ignores its cancellation
// reads working on tasks/get, with a message saying that its cancellation
// was requested and how long ago, and cancelling over REST and in the
// companion status; a second tasks/cancel, a REST cancel and the companion
// cancel are accepted. Once an operator terminates it, it reads cancelled
// everywhere, and a cancel is the ack of a terminal task. Before, nothing
// said that the run had not closed, a plain workflow read running (REST
// too), and a 2025-11-25 task read cancelled with nothing more.
func TestCancellingUntilClosed(t *testing.T) {
	s := newCancellingStack(t)
	for _, tool := range []string{"stubborn", "stubborn_plain"} {
		t.Run(tool, func(t *testing.T) {
			c := &client{t: t, url: s.mcp, caps: tasksCaps()}
			taskID := callTool(t, c, tool, map[string]any{})["taskId"].(string)
			runID := runOf(t, taskID)
			waitTask(t, c, taskID, status("working"))
			wantResult(t, c.call("tasks/cancel", map[string]any{"taskId": taskID}, nil))
			waitTask(t, c, taskID, cancellingMessage)
			if code, run := s.restRun(t, http.MethodGet, runID, ""); code != http.StatusOK || run["status"] != "cancelling" {
				t.Fatalf("REST getRun while cancelling = %d %v, want 200 cancelling", code, run)
			}
			// Every cancel is accepted again while the run is open.
			wantResult(t, c.call("tasks/cancel", map[string]any{"taskId": taskID}, nil))
			if code, res := s.restRun(t, http.MethodPost, runID, "/cancel"); code != http.StatusOK || res["status"] != "cancelling" {
				t.Fatalf("REST cancel of a cancelling run = %d %v, want 200 cancelling", code, res)
			}
			companion := callTool(t, c, "openwop_run_cancel", map[string]any{"runId": taskID})
			if st := companionStatus(t, companion); st.Status != "working" || !strings.Contains(text(t, companion), "cancellation requested") {
				t.Fatalf("companion cancel of a cancelling run = %v, want working, cancellation requested", companion)
			}
			for i := 0; i < 3; i++ {
				if r := wantResult(t, c.call("tasks/get", map[string]any{"taskId": taskID}, nil)); !cancellingMessage(r) {
					t.Fatalf("tasks/get of the open run after its cancels = %v, want working, cancellation requested", r)
				}
			}
			// A 2025-11-25 task is cancelled from its tasks/cancel on (its
			// revision says so), and its message says that the run has not
			// closed; it can be cancelled again.
			sessionless := &sessionlessClient{t: t, url: s.mcp, version: "2025-11-25"}
			for _, method := range []string{"tasks/get", "tasks/cancel"} {
				r := wantResult(t, sessionless.call(method, map[string]any{"taskId": taskID}))
				if msg, _ := r["statusMessage"].(string); r["status"] != "cancelled" || !strings.Contains(msg, "has not closed yet") {
					t.Fatalf("2025-11-25 %s of the open run = %v, want cancelled, has not closed yet", method, r)
				}
			}
			if err := s.env.Client.TerminateWorkflow(context.Background(), runID, "", "it ignores its cancellation"); err != nil {
				t.Fatal(err)
			}
			done := waitTask(t, c, taskID, status("cancelled"))
			if msg, _ := done["statusMessage"].(string); strings.Contains(msg, "not closed") {
				t.Fatalf("terminated task = %v", done)
			}
			if code, run := s.restRun(t, http.MethodGet, runID, ""); code != http.StatusOK || run["status"] != "cancelled" {
				t.Fatalf("REST getRun once terminated = %d %v, want 200 cancelled", code, run)
			}
			wantResult(t, c.call("tasks/cancel", map[string]any{"taskId": taskID}, nil))
			if code, res := s.restRun(t, http.MethodPost, runID, "/cancel"); code != http.StatusConflict {
				t.Fatalf("REST cancel of a terminated run = %d %v, want 409", code, res)
			}
			if r := sessionless.call("tasks/cancel", map[string]any{"taskId": taskID}); r.Error == nil || r.Error.Code != -32602 {
				t.Fatalf("2025-11-25 tasks/cancel of the terminated run = %s, want -32602", r.Raw)
			}
		})
	}
}
