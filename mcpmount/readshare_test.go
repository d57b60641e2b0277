package mcpmount

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"reflect"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	sdkclient "go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// wireCalls records, per workflow ID, the Temporal calls made on one
// client (calls that name no workflow, such as polls, are not recorded).
type wireCalls struct {
	mu   sync.Mutex
	byID map[string][]string
}

func (l *wireCalls) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var id string
	switch r := req.(type) {
	case interface{ GetWorkflowId() string }:
		id = r.GetWorkflowId()
	case interface {
		GetExecution() *commonpb.WorkflowExecution
	}:
		id = r.GetExecution().GetWorkflowId()
	}
	if id != "" {
		l.mu.Lock()
		l.byID[id] = append(l.byID[id], path.Base(method))
		l.mu.Unlock()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// during returns the calls about id that f made.
func (l *wireCalls) during(id string, f func()) []string {
	l.mu.Lock()
	before := len(l.byID[id])
	l.mu.Unlock()
	f()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.byID[id][before:]...)
}

// approvalBehind serves the mount (poll: its PollInterval, 0 for the
// default) over a run service with readWindow whose Temporal client passes
// every unary call through intercept, and starts a conformance-approval
// run through another service, so that the mount's holds nothing of it,
// until the run waits for its answer. It returns the server, the run's id
// and the other service.
func approvalBehind(t *testing.T, intercept grpc.UnaryClientInterceptor, readWindow, poll time.Duration) (*httptest.Server, string, *runs.Service) {
	t.Helper()
	env := testenv.Temporal(t)
	reg, err := conformancetools.Registry(tools.NewActivities(env.Logger, tools.ActivityOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	env.NewWorker(t, tq, reg.Register)
	client, err := sdkclient.Dial(sdkclient.Options{
		HostPort: env.Address, Namespace: env.Namespace, Logger: devtemporal.SDKLogger(env.Logger),
		ConnectionOptions: sdkclient.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(intercept)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	svc := runs.New(client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace, ReadWindow: readWindow})
	m, err := New(Options{Runs: svc, Catalog: staticCatalog(t, reg.Specs()...), Logger: env.Logger, PollInterval: poll})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	other := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
	snap, err := other.Start(ctx, runs.NewRun{Tool: signals.ToolSpec{Name: "conformance-approval"},
		Arguments: json.RawMessage(`{}`), Caller: auth.Anonymous(), Transport: signals.TransportMCP})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Await(ctx, auth.Anonymous(), snap.RunID, func(s signals.Snapshot) bool { return len(s.Interrupts) > 0 }); err != nil {
		t.Fatal(err)
	}
	return srv, snap.RunID, other
}

// TestTasksGetReadShared pins, on the wire, what issue 21 asks of rapid
// polling: N concurrent tasks/get of one run over the mount make one
// Temporal query, and a tasks/get within the read window none. The run is
// started by another service, so the mount's service holds nothing of it
// before the gets; the window is long so that nothing depends on timing.
func TestTasksGetReadShared(t *testing.T) {
	log := &wireCalls{byID: map[string][]string{}}
	srv, id, _ := approvalBehind(t, log.intercept, time.Minute, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	task := runid.Project(id)

	const n = 16
	errs := make([]error, n)
	calls := log.during(id, func() {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = wireGetStatus(ctx, srv.URL, task, "input_required")
			}()
		}
		wg.Wait()
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"QueryWorkflow"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("%d concurrent tasks/get of one run made the Temporal calls %v, want %v", n, calls, want)
	}
	var again error
	if calls := log.during(id, func() { again = wireGetStatus(ctx, srv.URL, task, "input_required") }); len(calls) != 0 {
		t.Fatalf("a tasks/get within the read window made the Temporal calls %v, want none", calls)
	}
	if again != nil {
		t.Fatal(again)
	}
}

// wireGetStatus sends one 2026-07-28 tasks/get for task to the mount at
// url and checks the status it answers. It reports instead of failing the
// test, so that it can run on any goroutine.
func wireGetStatus(ctx context.Context, url, task, want string) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": map[string]any{
		"taskId": task,
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    ProtocolVersion,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "0"},
			"io.modelcontextprotocol/clientCapabilities": tasksCaps(),
		},
	}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": ProtocolVersion, "Mcp-Method": "tasks/get", "Mcp-Name": task} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("tasks/get: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("tasks/get: %w", err)
	}
	var out struct {
		Result struct {
			Status string `json:"status"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Result.Status != want {
		return fmt.Errorf("tasks/get = HTTP %d %s, want status %s (%v)", resp.StatusCode, raw, want, err)
	}
	return nil
}
