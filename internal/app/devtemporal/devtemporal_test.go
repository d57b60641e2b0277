package devtemporal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// childEnv names the database file a re-executed test binary serves in
// TestRunSurvivesKilledServer.
const childEnv = "DEVTEMPORAL_TEST_CHILD_DB"

const (
	taskQueue  = "devtemporal-test"
	signalName = "go"
)

// waitForSignal is the test workflow: it returns its input joined with the
// payload of the first "go" signal.
func waitForSignal(ctx workflow.Context, in string) (string, error) {
	var s string
	workflow.GetSignalChannel(ctx, signalName).Receive(ctx, &s)
	return in + ":" + s, nil
}

func start(t *testing.T, opts devtemporal.Options) *devtemporal.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if testing.Verbose() {
		opts.Logger = zap.Must(zap.NewDevelopment())
	}
	s, err := devtemporal.Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return s
}

func dial(t *testing.T, s *devtemporal.Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  s.Address(),
		Namespace: s.Namespace(),
		Logger:    devtemporal.SDKLogger(zap.NewNop()),
	})
	if err != nil {
		t.Fatalf("dial %s: %v", s.Address(), err)
	}
	return c
}

func startOptions(id, tenant string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTenant).ValueSet(tenant),
			temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTool).ValueSet("waitForSignal"),
		),
	}
}

// TestRunSurvivesKilledServer starts a workflow on a server in another
// process, kills that process (SIGKILL, no graceful stop), starts a server
// on the same SQLite file here, and finishes the workflow.
func TestRunSurvivesKilledServer(t *testing.T) {
	if db := os.Getenv(childEnv); db != "" {
		serveChild(t, db)
		return
	}
	db := filepath.Join(t.TempDir(), "temporal.db")

	cmd := exec.Command(os.Args[0], "-test.run=^TestRunSurvivesKilledServer$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), childEnv+"="+db)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	var runID string
	for lines.Scan() {
		if id, ok := strings.CutPrefix(lines.Text(), "STARTED "); ok {
			runID = id
			break
		}
	}
	if runID == "" {
		t.Fatalf("child did not start the workflow (scan error: %v)", lines.Err())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	_ = cmd.Wait()
	go func() { _, _ = io.Copy(io.Discard, out) }()

	s := start(t, devtemporal.Options{DBFile: db})
	defer func() {
		if err := s.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	c := dial(t, s)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	desc, err := c.DescribeWorkflowExecution(ctx, "acme/restart-1", "")
	if err != nil {
		t.Fatalf("describe after restart: %v", err)
	}
	if got := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(); got != runID {
		t.Fatalf("run id after restart = %q, want %q", got, runID)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("status after restart = %v, want running", st)
	}

	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(waitForSignal)
	if err := w.Start(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	defer w.Stop()
	if err := c.SignalWorkflow(ctx, "acme/restart-1", "", signalName, "after-restart"); err != nil {
		t.Fatalf("signal: %v", err)
	}
	var result string
	if err := c.GetWorkflow(ctx, "acme/restart-1", "").Get(ctx, &result); err != nil {
		t.Fatalf("result: %v", err)
	}
	if want := "before-kill:after-restart"; result != want {
		t.Fatalf("result = %q, want %q", result, want)
	}
}

// serveChild is the child process of TestRunSurvivesKilledServer: it starts
// the workflow (no worker runs here), reports it, and waits to be killed.
func serveChild(t *testing.T, db string) {
	s := start(t, devtemporal.Options{DBFile: db})
	c := dial(t, s)
	run, err := c.ExecuteWorkflow(context.Background(), startOptions("acme/restart-1", "acme"), waitForSignal, "before-kill")
	if err != nil {
		t.Fatalf("child: start workflow: %v", err)
	}
	fmt.Printf("STARTED %s\n", run.GetRunID())
	select {}
}

// TestSearchAttributesAddedToExistingDatabase creates a database whose
// namespace has no custom search attributes, restarts on it with the
// defaults, and lists runs by OpenWOPTenant.
func TestSearchAttributesAddedToExistingDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")
	s := start(t, devtemporal.Options{DBFile: db, NoSearchAttributes: true})
	c := dial(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got := customAttributes(ctx, t, c, s.Namespace()); len(got) != 0 {
		t.Fatalf("custom search attributes = %v, want none", got)
	}
	c.Close()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	s = start(t, devtemporal.Options{DBFile: db})
	defer func() { _ = s.Stop() }()
	c = dial(t, s)
	defer c.Close()
	assertKeywordAttributes(ctx, t, c, s.Namespace())
	// A second registration is a no-op.
	if err := runs.EnsureSearchAttributes(ctx, c, s.Namespace()); err != nil {
		t.Fatalf("EnsureSearchAttributes again: %v", err)
	}
	assertListByTenant(ctx, t, c, s.Namespace())
}

// TestInMemoryServerWithUI checks the defaults (in-memory database, the
// OpenWOP search attributes registered before start, 7-day retention) and
// the embedded Web UI.
func TestInMemoryServerWithUI(t *testing.T) {
	uiPort := freeTCPPort(t)
	s := start(t, devtemporal.Options{UIPort: uiPort})
	defer func() { _ = s.Stop() }()
	if s.DBFile() != "" || s.Namespace() != "default" {
		t.Fatalf("DBFile=%q Namespace=%q, want in-memory and default", s.DBFile(), s.Namespace())
	}
	c := dial(t, s)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.Namespace()})
	if err != nil {
		t.Fatalf("describe namespace: %v", err)
	}
	if got := ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != devtemporal.DefaultRetention {
		t.Errorf("retention = %v, want %v", got, devtemporal.DefaultRetention)
	}
	assertKeywordAttributes(ctx, t, c, s.Namespace())
	assertListByTenant(ctx, t, c, s.Namespace())

	if want := fmt.Sprintf("http://127.0.0.1:%d", uiPort); s.UIURL() != want {
		t.Fatalf("UIURL = %q, want %q", s.UIURL(), want)
	}
	resp, err := http.Get(s.UIURL() + "/")
	if err != nil {
		t.Fatalf("GET UI: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Fatalf("GET UI / = %d, body %.200q", resp.StatusCode, body)
	}
	// The UI's API reaches the frontend and sees the run.
	resp, err = http.Get(s.UIURL() + "/api/v1/namespaces/default/workflows?query=" + "OpenWOPTenant%3D%27x%27")
	if err != nil {
		t.Fatalf("GET UI API: %v", err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var list struct {
		Executions []json.RawMessage `json:"executions"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Executions) != 1 {
		t.Fatalf("GET UI API = %d, body %.300q", resp.StatusCode, body)
	}
}

// TestBusyUIPortIsAnError checks that a taken UI port fails Start with an
// error instead of exiting the process.
func TestBusyUIPortIsAnError(t *testing.T) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := devtemporal.Start(ctx, devtemporal.Options{UIPort: l.Addr().(*net.TCPAddr).Port})
	if err == nil {
		_ = s.Stop()
		t.Fatal("Start with a busy UI port succeeded")
	}
	if !strings.Contains(err.Error(), "Web UI") {
		t.Fatalf("error = %v, want it to name the Web UI", err)
	}
}

func customAttributes(ctx context.Context, t *testing.T, c client.Client, ns string) map[string]enumspb.IndexedValueType {
	t.Helper()
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		t.Fatalf("list search attributes: %v", err)
	}
	return resp.GetCustomAttributes()
}

func assertKeywordAttributes(ctx context.Context, t *testing.T, c client.Client, ns string) {
	t.Helper()
	got := customAttributes(ctx, t, c, ns)
	for _, name := range signals.SearchAttributes {
		if got[name] != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			t.Errorf("search attribute %s = %v, want Keyword (all: %v)", name, got[name], got)
		}
	}
}

// assertListByTenant starts runs for tenants x and y and lists by
// OpenWOPTenant = 'x'.
func assertListByTenant(ctx context.Context, t *testing.T, c client.Client, ns string) {
	t.Helper()
	for _, id := range []string{"x/run-1", "y/run-2"} {
		tenant, _, _ := strings.Cut(id, "/")
		if _, err := c.ExecuteWorkflow(ctx, startOptions(id, tenant), waitForSignal, "in"); err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
	}
	// Both records visible, so that a test counting them after a stop
	// finds both.
	assertListed(ctx, t, c, ns, "x/run-1")
	assertListed(ctx, t, c, ns, "y/run-2")
}

// assertListed lists by the tenant of want (OpenWOPTenant = 'x' for
// x/run-1) until the list is the one run want, by the rule of
// internal/testing/visibility.
func assertListed(ctx context.Context, t *testing.T, c client.Client, ns, want string) {
	t.Helper()
	tenant, _, _ := strings.Cut(want, "/")
	query := signals.SearchAttrTenant + " = '" + tenant + "'"
	err := visibility.Await(ctx, visibility.Bound, func(ctx context.Context) error {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: query})
		if err != nil {
			return fmt.Errorf("ListWorkflow(%s): %w", query, err)
		}
		var ids []string
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		if len(ids) != 1 || ids[0] != want {
			return fmt.Errorf("ListWorkflow(%s) = %v, want [%s]", query, ids, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestBusyFrontendPortIsAnError checks that a taken frontend port fails
// Start with an error instead of exiting the process.
func TestBusyFrontendPortIsAnError(t *testing.T) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := devtemporal.Start(ctx, devtemporal.Options{Port: l.Addr().(*net.TCPAddr).Port})
	if err == nil {
		_ = s.Stop()
		t.Fatal("Start with a busy frontend port succeeded")
	}
	if !strings.Contains(err.Error(), "frontend address") {
		t.Fatalf("error = %v, want it to name the frontend address", err)
	}
}
