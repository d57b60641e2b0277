package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testenv"
	"github.com/openwop/temporal-mcp/signals"
)

func echo(_ workflow.Context, s string) (string, error) { return "echo " + s, nil }

func getHealth(t *testing.T, addr string) (int, app.Health) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	defer resp.Body.Close()
	var h app.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("decode /healthz: %v", err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("/healthz Content-Type = %q", ct)
	}
	return resp.StatusCode, h
}

// TestEmbeddedApp runs the default assembly: embedded Temporal on a SQLite
// file in the data dir, the in-process worker, the caller's handler and
// /healthz.
func TestEmbeddedApp(t *testing.T) {
	cfg := app.Config{
		HTTPAddr: "127.0.0.1:0", TaskQueue: testenv.UniqueTaskQueue(t), Worker: true,
		DataDir: filepath.Join(t.TempDir(), "data"), TemporalPort: 0, UIPort: 0,
		TemporalLogLevel: zap.WarnLevel,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got app.Deps
	a, err := app.Start(ctx, cfg, testenv.Logger(), app.Parts{
		Register: func(r worker.Registry) { r.RegisterWorkflow(echo) },
		Handler: func(d app.Deps) (http.Handler, error) {
			got = d
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "mounted "+r.URL.Path) }), nil
		},
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() {
		if err := a.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	if !a.Embedded || a.DBFile != filepath.Join(cfg.DataDir, "temporal.db") || got.Client == nil ||
		got.Namespace != "default" || got.TaskQueue != cfg.TaskQueue || got.Logger == nil {
		t.Fatalf("app = %+v, deps = %+v", a, got)
	}

	code, h := getHealth(t, a.HTTPAddr)
	if code != http.StatusOK || h.Status != "ok" || !h.Temporal.Reachable || !h.Temporal.Embedded ||
		h.Temporal.Address != a.TemporalAddress || h.Temporal.Namespace != "default" {
		t.Fatalf("/healthz = %d %+v", code, h)
	}
	resp, err := http.Get("http://" + a.HTTPAddr + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "mounted /mcp" {
		t.Fatalf("GET /mcp = %q, want the caller's handler", body)
	}

	// The in-process worker runs workflows.
	run, err := a.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: cfg.TaskQueue}, echo, "hi")
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	var out string
	if err := run.Get(ctx, &out); err != nil || out != "echo hi" {
		t.Fatalf("result = %q, %v", out, err)
	}
}

// TestRemoteApp connects to a separately running server (as with
// TEMPORAL_ADDRESS), registers the search attributes there, and reports
// an unreachable Temporal on /healthz with 503.
func TestRemoteApp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devtemporal.Start(ctx, devtemporal.Options{SearchAttributes: []string{}})
	if err != nil {
		t.Fatalf("devtemporal: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.Stop()
		}
	}()

	cfg := app.Config{
		HTTPAddr: "127.0.0.1:0", TaskQueue: "q", Worker: false, Remote: true,
		Client: client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()},
	}
	a, err := app.Start(ctx, cfg, testenv.Logger(), app.Parts{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = a.Shutdown(context.Background()) }()
	if a.Embedded || a.TemporalAddress != srv.Address() || a.UIURL != "" {
		t.Fatalf("app = %+v, want remote %s", a, srv.Address())
	}
	sas, err := a.Client.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: srv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range signals.SearchAttributes {
		if sas.GetCustomAttributes()[name] != enums.INDEXED_VALUE_TYPE_KEYWORD {
			t.Errorf("search attribute %s not registered: %v", name, sas.GetCustomAttributes())
		}
	}
	if code, h := getHealth(t, a.HTTPAddr); code != http.StatusOK || h.Temporal.Embedded {
		t.Fatalf("/healthz = %d %+v", code, h)
	}
	resp, err := http.Get("http://" + a.HTTPAddr + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /mcp without a handler = %d, want 404", resp.StatusCode)
	}

	stopped = true
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	code, h := getHealth(t, a.HTTPAddr)
	if code != http.StatusServiceUnavailable || h.Status != "unavailable" || h.Temporal.Reachable || h.Temporal.Error == "" {
		t.Fatalf("/healthz with Temporal down = %d %+v, want 503", code, h)
	}
}
