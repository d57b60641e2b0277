package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

func echo(_ workflow.Context, s string) (string, error) { return "echo " + s, nil }

// echoWorker is a Parts.Worker serving echo until ctx ends.
func echoWorker(ctx context.Context, d app.Deps) error {
	w := worker.New(d.Client, d.TaskQueue, worker.Options{})
	w.RegisterWorkflow(echo)
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	w.Stop()
	return nil
}

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
// file in the data dir, the in-process worker (waited for), the caller's
// handler and /healthz.
func TestEmbeddedApp(t *testing.T) {
	cfg := config.Config{
		HTTPAddr: "127.0.0.1:0", TaskQueue: testenv.UniqueTaskQueue(t), Worker: true,
		DataDir: filepath.Join(t.TempDir(), "data"), TemporalPort: 0, UIPort: 0,
		TemporalLogLevel: zap.WarnLevel,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got app.Deps
	var polls atomic.Int32
	a, err := app.Start(ctx, cfg, testenv.Logger(), app.Parts{
		Worker: echoWorker,
		WorkerReady: func(context.Context) (bool, error) {
			return polls.Add(1) >= 3, nil
		},
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
	if polls.Load() != 3 {
		t.Errorf("WorkerReady polled %d times, want 3 (until ready)", polls.Load())
	}
	if !a.Embedded || a.DBFile != filepath.Join(cfg.DataDir, "temporal.db") || got.Client == nil ||
		got.Namespace != runs.DefaultNamespace || got.TaskQueue != cfg.TaskQueue || got.Logger == nil {
		t.Fatalf("app = %+v, deps = %+v", a, got)
	}

	code, h := getHealth(t, a.HTTPAddr)
	if code != http.StatusOK || h.Status != "ok" || !h.Temporal.Reachable || !h.Temporal.Embedded ||
		h.Temporal.Address != a.TemporalAddress || h.Temporal.Namespace != runs.DefaultNamespace || h.SearchAttributes != nil {
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

// remoteConfig is the configuration of a process connecting to env's
// shared server as with TEMPORAL_ADDRESS.
func remoteConfig(t *testing.T, env *testenv.Env) config.Config {
	return config.Config{
		HTTPAddr: "127.0.0.1:0", TaskQueue: testenv.UniqueTaskQueue(t), Worker: true, Remote: true,
		Client: client.Options{HostPort: env.Address, Namespace: env.Namespace},
	}
}

// TestDepsWorkerFailureEndsTheProcess: a worker that fails before it is
// ready fails Start; one that fails later ends Run with its error.
func TestDepsWorkerFailureEndsTheProcess(t *testing.T) {
	env := testenv.Temporal(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	boom := errors.New("boom")

	_, err := app.Start(ctx, remoteConfig(t, env), testenv.Logger(), app.Parts{
		Worker:      func(context.Context, app.Deps) error { return boom },
		WorkerReady: func(context.Context) (bool, error) { return false, nil },
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "in-process worker") {
		t.Fatalf("Start with a failing worker = %v, want the worker's error", err)
	}

	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, remoteConfig(t, env), testenv.Logger(), app.Parts{
			Worker: func(ctx context.Context, _ app.Deps) error {
				select {
				case <-time.After(300 * time.Millisecond):
					return boom
				case <-ctx.Done():
					return nil
				}
			},
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("Run = %v, want the worker's error", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not end after the worker failed")
	}
}

// TestRemoteApp connects to a separately running server (as with
// TEMPORAL_ADDRESS), registers the search attributes there, and reports
// an unreachable Temporal on /healthz with 503.
func TestRemoteApp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devtemporal.Start(ctx, devtemporal.Options{NoSearchAttributes: true})
	if err != nil {
		t.Fatalf("devtemporal: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.Stop()
		}
	}()

	cfg := config.Config{
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
	assertKeywordAttributes(ctx, t, a.Client, srv.Namespace())
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

// TestSearchAttributesRefused: where the operator API refuses to add the
// search attributes (Temporal Cloud without admin rights), the process
// starts, /healthz answers 503 unhealthy naming them and the commands, and
// turns healthy once an operator added them.
func TestSearchAttributesRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devtemporal.Start(ctx, devtemporal.Options{NoSearchAttributes: true})
	if err != nil {
		t.Fatalf("devtemporal: %v", err)
	}
	defer func() { _ = srv.Stop() }()

	deny := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.HasSuffix(method, "/AddSearchAttributes") {
			return serviceerror.NewPermissionDenied("Request unauthorized.", "")
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	cfg := config.Config{
		HTTPAddr: "127.0.0.1:0", TaskQueue: "q", Remote: true,
		Client: client.Options{HostPort: srv.Address(), Namespace: srv.Namespace(),
			ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(deny)}}},
	}
	a, err := app.Start(ctx, cfg, testenv.Logger(), app.Parts{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = a.Shutdown(context.Background()) }()

	code, h := getHealth(t, a.HTTPAddr)
	if code != http.StatusServiceUnavailable || h.Status != "unhealthy" || !h.Temporal.Reachable || h.SearchAttributes == nil ||
		strings.Join(h.SearchAttributes.Missing, ",") != strings.Join(signals.SearchAttributes, ",") ||
		len(h.SearchAttributes.Commands) != 2 || !strings.Contains(h.SearchAttributes.Message, "temporal operator search-attribute create --namespace "+srv.Namespace()) ||
		!strings.Contains(h.SearchAttributes.Message, "tcld namespace search-attributes add") {
		t.Fatalf("/healthz without search attributes = %d %+v", code, h)
	}

	// An operator adds them; /healthz notices on a later check.
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.Address(), Namespace: srv.Namespace(), Logger: devtemporal.SDKLogger(zap.NewNop())})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := runs.EnsureSearchAttributes(ctx, c, srv.Namespace()); err != nil {
		t.Fatalf("EnsureSearchAttributes: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, h = getHealth(t, a.HTTPAddr)
		if code == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if code != http.StatusOK || h.Status != "ok" || h.SearchAttributes != nil {
		t.Fatalf("/healthz after the attributes were added = %d %+v", code, h)
	}
}

func assertKeywordAttributes(ctx context.Context, t *testing.T, c client.Client, ns string) {
	t.Helper()
	sas, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range signals.SearchAttributes {
		if sas.GetCustomAttributes()[name] != enums.INDEXED_VALUE_TYPE_KEYWORD {
			t.Errorf("search attribute %s not registered: %v", name, sas.GetCustomAttributes())
		}
	}
}
