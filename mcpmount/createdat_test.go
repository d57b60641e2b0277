package mcpmount

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// plainPause is a plain workflow that waits a second and returns its
// arguments.
func plainPause(ctx workflow.Context, args map[string]any) (map[string]any, error) {
	return args, workflow.Sleep(ctx, time.Second)
}

// pauseHour is an openwop tool that waits an hour: its run timeout ends
// it first.
func pauseHour(ctx workflow.Context, _ struct{}) (string, error) {
	return "done", workflow.Sleep(ctx, time.Hour)
}

// timesStack is a stack whose runs start on a task queue with a worker of
// the example tools, a plain workflow ("plain_pause") and a tool with a
// 2 s run timeout ("pause_hour"), and beside the mount the REST API on the
// same run service and catalog.
type timesStack struct {
	*stack
	rest *httptest.Server
}

func newTimesStack(t *testing.T) *timesStack {
	t.Helper()
	keys := keysFor(t, "ka=acme:alice")
	var (
		tq  string
		svc *runs.Service
		cat []signals.ToolSpec
		reg *workflows.Registry
	)
	s := newStackWith(t, keys, "", func(o *Options) func(*Mount) {
		env := testenv.Temporal(t)
		tq = testenv.UniqueTaskQueue(t)
		svc = runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
		acts := tools.NewActivities(testenv.Logger(), tools.ActivityOptions{HeartbeatInterval: 200 * time.Millisecond, SectionDelay: 10 * time.Millisecond})
		timed := workflows.NewTool("pause_hour", "Waits an hour, bounded by a 2 s run timeout.", pauseHour, workflows.WithRunTimeout(2*time.Second))
		var err error
		if reg, err = workflows.NewRegistry(append(append(tools.ExampleTools(), conformancetools.Tools()...), timed), acts); err != nil {
			t.Fatal(err)
		}
		cat = append(reg.Specs(), signals.ToolSpec{Name: "plain_pause", Description: "A plain workflow that waits a second.",
			InputSchema: json.RawMessage(`{"type":"object"}`), TaskSupport: signals.TaskOptional, WorkflowType: "PlainPause", Contract: signals.ContractPlain})
		o.Runs = svc
		o.Catalog = staticCatalog(t, cat...)
		return nil
	})
	s.env.NewWorker(t, tq, func(r worker.Registry) {
		reg.Register(r)
		r.RegisterWorkflowWithOptions(plainPause, workflow.RegisterOptions{Name: "PlainPause"})
	})
	api, err := restapi.New(restapi.Options{Runs: svc, Authenticate: keys.Authenticate, Catalog: staticCatalog(t, cat...)})
	if err != nil {
		t.Fatal(err)
	}
	rest := httptest.NewServer(api)
	t.Cleanup(rest.Close)
	return &timesStack{stack: s, rest: rest}
}

// restCall sends a REST request with alice's key and decodes the JSON
// answer.
func (s *timesStack) restCall(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.rest.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer ka")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: decode: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// TestCreatedAtIdentical: a task's createdAt is the run's creation time,
// byte for byte the same in the CreateTaskResult, tasks/get (while the run
// works and once it ended), every notifications/tasks of a listener, REST
// getRun, and REST createRun for a run REST started; for both contracts.
func TestCreatedAtIdentical(t *testing.T) {
	s := newTimesStack(t)
	alice := s.client(t, "ka", tasksCaps())
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"slow_compute", map[string]any{"seconds": 1}},
		{"plain_pause", map[string]any{"n": 1}},
	} {
		t.Run(tc.tool+"/mcp", func(t *testing.T) {
			created := callTool(t, alice, tc.tool, tc.args)
			id, want := created["taskId"].(string), created["createdAt"].(string)
			if _, err := time.Parse(time.RFC3339Nano, want); err != nil {
				t.Fatalf("CreateTaskResult createdAt %q: %v", want, err)
			}
			s.wantCreatedAt(t, alice, id, want)
			st := openListen(t, s.addr(), "ka", "l", []string{id}, tasksCaps())
			notified := 0
			for msg := st.next(t); msg != nil; msg = st.next(t) {
				if msg["method"] != "notifications/tasks" {
					continue
				}
				notified++
				if got := msg["params"].(map[string]any)["createdAt"]; got != want {
					t.Fatalf("notifications/tasks createdAt = %v, want %s", got, want)
				}
			}
			if notified == 0 {
				t.Fatal("no notifications/tasks")
			}
			s.awaitEnd(t, aliceSubject(), runOf(t, id), time.Minute)
			s.wantCreatedAt(t, alice, id, want)
		})
		t.Run(tc.tool+"/rest", func(t *testing.T) {
			code, created := s.restCall(t, http.MethodPost, "/runs", map[string]any{"workflowId": tc.tool, "inputs": tc.args})
			if code != http.StatusCreated {
				t.Fatalf("POST /runs = %d %v", code, created)
			}
			want, _ := created["createdAt"].(string)
			if _, err := time.Parse(time.RFC3339Nano, want); err != nil {
				t.Fatalf("createRun createdAt %q: %v", want, err)
			}
			id := strings.TrimPrefix(created["statusUrl"].(string), s.rest.URL+"/runs/")
			s.wantCreatedAt(t, alice, id, want)
			s.awaitEnd(t, aliceSubject(), runOf(t, id), time.Minute)
			s.wantCreatedAt(t, alice, id, want)
		})
	}
}

// aliceSubject is the subject key "ka" authenticates.
func aliceSubject() signals.Subject {
	return signals.Subject{Issuer: auth.IssuerAPIKey, SubjectID: "alice", Tenant: "acme", Kind: "api-key"}
}

// wantCreatedAt checks the createdAt of tasks/get and of REST getRun of
// the task id.
func (s *timesStack) wantCreatedAt(t *testing.T, c *client, id, want string) {
	t.Helper()
	got := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil))
	if got["createdAt"] != want {
		t.Fatalf("tasks/get createdAt = %v (status %v), want %s", got["createdAt"], got["status"], want)
	}
	code, run := s.restCall(t, http.MethodGet, "/runs/"+id, nil)
	if code != http.StatusOK || run["createdAt"] != want {
		t.Fatalf("GET /runs/%s = %d, createdAt %v (status %v), want %s", id, code, run["createdAt"], run["status"], want)
	}
}

// TestRunTimeoutOnTheWire: a tool's run timeout ends its run: tasks/get
// answers the task completed with a tool error naming the timeout, and
// REST getRun the run failed with the code workflow_timed_out.
func TestRunTimeoutOnTheWire(t *testing.T) {
	s := newTimesStack(t)
	alice := s.client(t, "ka", tasksCaps())
	id := callTool(t, alice, "pause_hour", map[string]any{})["taskId"].(string)
	s.awaitEnd(t, aliceSubject(), runOf(t, id), time.Minute)
	got := wantResult(t, alice.call("tasks/get", map[string]any{"taskId": id}, nil))
	res, _ := got["result"].(map[string]any)
	if got["status"] != "completed" || res == nil || res["isError"] != true || !strings.Contains(text(t, res), "run timeout of 2s") {
		t.Fatalf("tasks/get = %v, want completed with a tool error naming the 2s run timeout", got)
	}
	code, run := s.restCall(t, http.MethodGet, "/runs/"+id, nil)
	runErr, _ := run["error"].(map[string]any)
	if code != http.StatusOK || run["status"] != "failed" || runErr["code"] != runs.CodeTimedOut ||
		!strings.Contains(runErr["message"].(string), "run timeout of 2s") {
		t.Fatalf("GET /runs/%s = %d %v, want failed with %s", id, code, run, runs.CodeTimedOut)
	}
}
