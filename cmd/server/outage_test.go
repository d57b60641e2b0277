package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/testing/openapicheck"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/workflows"
)

// Log messages of the worker watch (runs/workers.go).
const (
	outageWarning = "no worker serves the task queue"
	outageOver    = "a worker polls the task queue again"
)

// outageTask is the part of a tasks/get result the outage test reads.
type outageTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	InputRequests map[string]struct {
		Method string `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	} `json:"inputRequests"`
}

func getTask(t *testing.T, addr, id string) outageTask {
	t.Helper()
	r := mcpCall(t, addr, "tasks/get", id, map[string]any{"taskId": id})
	if r.Error != nil {
		t.Fatalf("tasks/get: %d %s", r.Error.Code, r.Error.Message)
	}
	var tk outageTask
	if err := json.Unmarshal(r.Result, &tk); err != nil {
		t.Fatalf("tasks/get result %s: %v", r.Result, err)
	}
	return tk
}

// restRun is the part of GET /runs/{id} the outage test reads.
type restRun struct {
	Status     string `json:"status"`
	Interrupts []struct {
		InterruptID string   `json:"interruptId"`
		NodeID      string   `json:"nodeId"`
		Kind        string   `json:"kind"`
		Title       string   `json:"title"`
		Actions     []string `json:"actions"`
	} `json:"interrupts"`
}

// getRunREST reads GET /runs/{id}; id is the wire form (an MCP task id).
func getRunREST(t *testing.T, addr, id string) restRun {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/runs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r restRun
	if err := json.Unmarshal(raw, &r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /runs/%s: %d %s (%v)", id, resp.StatusCode, raw, err)
	}
	return r
}

func health(t *testing.T, addr string) (int, app.Health) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h app.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("decode /healthz: %v", err)
	}
	return resp.StatusCode, h
}

// logged returns the lines at level whose message contains snippet.
func logged(logs *observer.ObservedLogs, level zapcore.Level, snippet string) []observer.LoggedEntry {
	var out []observer.LoggedEntry
	for _, e := range logs.FilterMessageSnippet(snippet).All() {
		if e.Level == level {
			out = append(out, e)
		}
	}
	return out
}

// TestWorkerOutage runs the server's assembly against Temporal with the
// worker in another process (here: another client), starts a run that
// waits for approval, and stops the worker: tasks/get and GET /runs/{id}
// still show the waiting run with its question (from what the run
// published in Temporal), /healthz is degraded naming the task queue, and
// the outage is logged once at WARN however many requests it meets; an
// approval sent meanwhile is accepted. When a worker polls again, /healthz
// is ok, the end of the outage is logged at INFO, and the run completes
// with that approval.
func TestWorkerOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	core, logs := observer.New(zap.InfoLevel)
	logger := zap.New(zapcore.NewTee(core, testenv.Logger().Core()))

	reg, err := tools.DefaultRegistry(tools.NewActivities(logger, tools.ActivityOptions{OutputDir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	runWorker := func() (stop func()) {
		wctx, wcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- reg.Run(wctx, env.Client, tq, workflows.WorkerOptions{}) }()
		return func() {
			wcancel()
			if err := <-done; err != nil {
				t.Errorf("worker: %v", err)
			}
		}
	}
	stopWorker := runWorker()

	cfg := config.Config{
		HTTPAddr: "127.0.0.1:0", TaskQueue: tq, Remote: true,
		Client: client.Options{HostPort: env.Address, Namespace: env.Namespace},
	}
	ad, err := app.NewServer(app.ServerOptions{Registry: reg, Authenticate: auth.AnonymousAuthenticator})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(ctx, cfg, logger, ad.Parts())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = a.Shutdown(context.Background()) }()

	// Wait until the worker's tools are listed, then start a run that
	// waits for approval.
	for {
		var list struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		r := mcpCall(t, a.HTTPAddr, "tools/list", "", map[string]any{})
		if r.Error == nil && json.Unmarshal(r.Result, &list) == nil &&
			slices.ContainsFunc(list.Tools, func(tl struct{ Name string }) bool { return tl.Name == "publish_report" }) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("publish_report was never listed")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, h := health(t, a.HTTPAddr); code != http.StatusOK || h.Status != "ok" {
		t.Fatalf("/healthz with a worker = %d %+v", code, h)
	}
	r := mcpCall(t, a.HTTPAddr, "tools/call", "publish_report", map[string]any{
		"name": "publish_report", "arguments": map[string]any{"title": "Q3", "topic": "sales", "sections": 2},
	})
	var created outageTask
	if r.Error != nil || json.Unmarshal(r.Result, &created) != nil || created.TaskID == "" {
		t.Fatalf("tools/call: %+v %s", r.Error, r.Result)
	}
	id := created.TaskID
	var waiting outageTask
	for waiting = getTask(t, a.HTTPAddr, id); waiting.Status != "input_required"; waiting = getTask(t, a.HTTPAddr, id) {
		if ctx.Err() != nil {
			t.Fatalf("the run never asked for approval: %+v", waiting)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(waiting.InputRequests) != 1 {
		t.Fatalf("input requests with a worker: %+v", waiting.InputRequests)
	}

	stopWorker()

	// Every read answers the waiting run with its question, until the
	// server has noticed the outage (a few seconds without a poll) and
	// beyond.
	noticed := 0
	for i := 0; noticed < 3; i++ {
		if ctx.Err() != nil {
			t.Fatal("the outage was never noticed")
		}
		if _, h := health(t, a.HTTPAddr); h.Status == "degraded" {
			noticed++
		}
		tk := getTask(t, a.HTTPAddr, id)
		if tk.Status != "input_required" || len(tk.InputRequests) != 1 {
			t.Fatalf("tasks/get %d without a worker = %+v, want input_required with the approval", i, tk)
		}
		for key, req := range tk.InputRequests {
			want := waiting.InputRequests[key]
			if req.Method != want.Method || req.Params.Message != want.Params.Message || !strings.Contains(req.Params.Message, "Q3") {
				t.Errorf("tasks/get %d without a worker: input request %s = %+v, want %+v", i, key, req, want)
			}
		}
		run := getRunREST(t, a.HTTPAddr, id)
		if run.Status != "waiting-approval" || len(run.Interrupts) != 1 || !strings.Contains(run.Interrupts[0].Title, "Q3") ||
			run.Interrupts[0].Kind != "approval" || !slices.Contains(run.Interrupts[0].Actions, "accept") {
			t.Fatalf("GET /runs/{id} %d without a worker = %+v, want waiting-approval with the approval", i, run)
		}
	}
	code, h := health(t, a.HTTPAddr)
	if code != http.StatusOK || h.Status != "degraded" || h.Workers == nil || !slices.Contains(h.Workers.Unserved, tq) ||
		!strings.Contains(h.Workers.Message, tq) {
		t.Fatalf("/healthz without a worker = %d %+v, want degraded naming %s", code, h, tq)
	}
	if w := logged(logs, zapcore.WarnLevel, outageWarning); len(w) != 1 || w[0].ContextMap()["taskQueue"] != tq {
		t.Fatalf("outage WARN lines: %+v, want one naming %s", w, tq)
	}
	// An approval is accepted now and applied once a worker returns: REST
	// says it is recorded but not applied, MCP acks it.
	run := getRunREST(t, a.HTTPAddr, id)
	checker, err := openapicheck.New(restapi.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := checker.Client(t).Post("http://"+a.HTTPAddr+"/runs/"+id+"/interrupts/"+run.Interrupts[0].NodeID, "application/json",
		strings.NewReader(`{"resumeValue":{"action":"accept"}}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(raw), "worker_unavailable") {
		t.Fatalf("REST resolve without a worker = %d %s, want 503 worker_unavailable", resp.StatusCode, raw)
	}
	for key := range waiting.InputRequests {
		u := mcpCall(t, a.HTTPAddr, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}},
		}})
		if u.Error != nil {
			t.Fatalf("tasks/update without a worker: %d %s", u.Error.Code, u.Error.Message)
		}
	}

	// A worker polls again: the outage ends, once.
	stopWorker = runWorker()
	defer stopWorker()
	for {
		if code, h = health(t, a.HTTPAddr); code == http.StatusOK && h.Status == "ok" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("/healthz after the worker returned = %d %+v", code, h)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if i := logged(logs, zapcore.InfoLevel, outageOver); len(i) != 1 || i[0].ContextMap()["taskQueue"] != tq {
		t.Fatalf("outage INFO lines: %+v, want one naming %s", i, tq)
	}
	if w := logged(logs, zapcore.WarnLevel, outageWarning); len(w) != 1 {
		t.Fatalf("outage WARN lines after it ended: %d, want 1", len(w))
	}
	for tk := getTask(t, a.HTTPAddr, id); tk.Status != "completed"; tk = getTask(t, a.HTTPAddr, id) {
		if ctx.Err() != nil {
			t.Fatalf("the run did not complete after the worker returned: %+v", tk)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
