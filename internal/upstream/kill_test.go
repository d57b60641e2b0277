package upstream_test

// A worker killed with SIGKILL during upstream calls: the worker is a
// process of its own (this test binary running cmd/worker's code,
// toolworker.Main, with OPENWOP_UPSTREAMS_FILE), the upstreams and the
// Temporal server are the test's.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/app/toolworker"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/upstream"
	"github.com/openwop/temporal-mcp/mcpcall/mcpcalltest"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/workflows"
)

// workerProcessEnv, set to "1", makes the test binary cmd/worker
// (TestUpstreamWorkerProcess).
const workerProcessEnv = "UPSTREAM_TEST_WORKER_PROCESS"

// TestUpstreamWorkerProcess is not a test: started by
// TestUpstreamCallsSurviveWorkerKill, it is cmd/worker (toolworker.Main,
// configured by the environment) until it is killed.
func TestUpstreamWorkerProcess(t *testing.T) {
	if os.Getenv(workerProcessEnv) != "1" {
		t.Skip("run by TestUpstreamCallsSurviveWorkerKill as a worker process")
	}
	if err := toolworker.Main(); err != nil {
		t.Fatal(err)
	}
}

// blocker is a plain upstream (the go-sdk over streamable HTTP) whose
// calls are in flight when the worker is killed: write is neither
// read-only nor idempotent and never answers; read is read-only, and
// answers every call but its first.
type blocker struct {
	mu      sync.Mutex
	calls   map[string]int
	entered chan string   // a tool's name each time a call of it starts
	release chan struct{} // closed when the test ends: the calls left end
}

func (b *blocker) serve(t *testing.T) string {
	b.calls, b.entered, b.release = map[string]int{}, make(chan string, 8), make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "blocker", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "write", Description: "Never answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			b.count("write")
			b.wait(ctx)
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "read", Description: "Hangs the first time, answers the next.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if b.count("read") == 1 {
				b.wait(ctx)
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "read it"}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(b.release) }) // before the server closes
	return srv.URL
}

// count counts a call of tool, tells b.entered, and returns the count.
func (b *blocker) count(tool string) int {
	b.mu.Lock()
	b.calls[tool]++
	n := b.calls[tool]
	b.mu.Unlock()
	select {
	case b.entered <- tool:
	default: // nobody waits for it any more
	}
	return n
}

func (b *blocker) wait(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-b.release:
	}
}

func (b *blocker) called(tool string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[tool]
}

// TestUpstreamCallsSurviveWorkerKill kills the worker process with
// SIGKILL while three calls are in flight, then starts another worker:
// the call of a Tasks upstream's tool (not safe to repeat) completes, its
// tools/call sent once; the call of a plain upstream's write tool fails
// with upstream_call_interrupted, sent once; the call of its read-only
// tool is made again and completes.
func TestUpstreamCallsSurviveWorkerKill(t *testing.T) {
	env := testenv.Temporal(t)
	b := &blocker{}
	plainURL := b.serve(t)
	up := mcpcalltest.NewServer(t)
	up.PollIntervalMs = 200
	steps := make([]mcpcalltest.Step, 25)
	for i := range steps {
		steps[i] = mcpcalltest.Working(fmt.Sprintf("step %d", i))
	}
	up.Tool("job", append(steps, mcpcalltest.Text("job done"))...)
	prefix := randomPrefix()
	fileText := fmt.Sprintf(`{"upstreams":[
		{"name":"plain","url":%q,"prefix":%q,"policy":{"write":{"heartbeat":"2s"},"read":{"heartbeat":"2s"}}},
		{"name":"tasks","url":%q,"prefix":%q}]}`, plainURL, prefix, up.URL, prefix)
	path := filepath.Join(t.TempDir(), "upstreams.json")
	if err := os.WriteFile(path, []byte(fileText), 0o600); err != nil {
		t.Fatal(err)
	}
	// One task queue per test binary: the worker process publishes the
	// example tools too, and a killed worker's publication of them stays
	// until it is judged dead, which refuses the same tools on another
	// queue (-count=2).
	queue := fmt.Sprintf("upstream-kill-%d", os.Getpid())
	killed := startWorkerProcess(t, env, queue, path)
	c := &mcpClient{t: t, url: serveMount(t, env)}
	c.waitTools(prefix+"write", prefix+"read", prefix+"job")

	write := c.result("tools/call", map[string]any{"name": prefix + "write", "arguments": map[string]any{}}, taskCaps)["taskId"]
	read := c.result("tools/call", map[string]any{"name": prefix + "read", "arguments": map[string]any{}}, taskCaps)["taskId"]
	for seen := map[string]bool{}; !seen["write"] || !seen["read"]; {
		select {
		case tool := <-b.entered:
			seen[tool] = true
		case <-time.After(time.Minute):
			t.Fatalf("the upstream saw the calls %v within a minute, want write and read", seen)
		}
	}
	job := c.result("tools/call", map[string]any{"name": prefix + "job", "arguments": map[string]any{}}, taskCaps)["taskId"]
	for deadline := time.Now().Add(time.Minute); !taskPolled(up); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the upstream task of job was not polled within a minute")
		}
	}
	killed()

	file, err := upstream.Parse([]byte(fileText), nil)
	if err != nil {
		t.Fatal(err)
	}
	runReplacementWorker(t, env, queue, file)

	res := waitTaskEnd(c, job.(string))
	if res["status"] != "completed" || !strings.Contains(fmt.Sprint(res["result"]), "job done") {
		t.Errorf("job after the kill: %v, want completed with the upstream task's result", res)
	}
	if n := toolCalls(up, "job"); n != 1 || len(up.Tasks("job")) != 1 {
		t.Errorf("the Tasks upstream received %d tools/call of job and made %d tasks, want 1 and 1", n, len(up.Tasks("job")))
	}

	res = waitTaskEnd(c, write.(string))
	if !strings.Contains(fmt.Sprint(res["result"]), "may or may not have taken effect, and it was not repeated") {
		t.Errorf("write after the kill: %v, want an error saying it may or may not have taken effect and was not repeated", res)
	}
	if code := runErrorCode(t, env, write.(string)); code != upstream.CodeUpstreamInterrupted {
		t.Errorf("write's run failed with code %q, want %s", code, upstream.CodeUpstreamInterrupted)
	}
	if n := b.called("write"); n != 1 {
		t.Errorf("the upstream received %d calls of write, want 1", n)
	}

	res = waitTaskEnd(c, read.(string))
	if res["status"] != "completed" || !strings.Contains(fmt.Sprint(res["result"]), "read it") {
		t.Errorf("read after the kill: %v, want completed with the second call's answer", res)
	}
	if n := b.called("read"); n != 2 {
		t.Errorf("the upstream received %d calls of read, want 2", n)
	}
}

// startWorkerProcess starts this test binary as cmd/worker on queue,
// serving the upstreams of the file at path, and returns what kills it
// with SIGKILL (and waits for it to exit).
func startWorkerProcess(t *testing.T, env *testenv.Env, queue, path string) (kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestUpstreamWorkerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), workerProcessEnv+"=1",
		"TEMPORAL_ADDRESS="+env.Address, "TEMPORAL_NAMESPACE="+env.Namespace,
		"OPENWOP_TASK_QUEUE="+queue, "OPENWOP_UPSTREAMS_FILE="+path, "OPENWOP_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // killed: an error
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return func() {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-exited
	}
}

// runReplacementWorker connects to the upstreams of file and runs a worker of their
// tools on queue until the test ends.
func runReplacementWorker(t *testing.T, env *testenv.Env, queue string, file upstream.File) {
	t.Helper()
	cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
	set, err := upstream.Connect(cctx, file, upstream.Options{Logger: env.Logger})
	ccancel()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := workflows.NewRegistry(set.Tools(), set.Activities())
	if err != nil {
		_ = set.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(ctx, env.Client, queue, workflows.WorkerOptions{}) }()
	t.Cleanup(func() { cancel(); <-done; _ = set.Close() })
}

// waitTaskEnd polls tasks/get until the task is in a terminal status (two
// minutes at most: an activity in flight at a kill is given up after its
// timeout) and returns its last tasks/get.
func waitTaskEnd(c *mcpClient, taskID string) map[string]any {
	c.t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		res := c.result("tasks/get", map[string]any{"taskId": taskID}, taskCaps)
		switch res["status"] {
		case "completed", "failed", "cancelled":
			return res
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s did not end within two minutes: %v", taskID, res)
		}
	}
}

// taskPolled reports whether the Tasks upstream has received a tasks/get.
func taskPolled(up *mcpcalltest.Server) bool {
	for _, r := range up.Requests() {
		if r.Method == "tasks/get" {
			return true
		}
	}
	return false
}

// toolCalls counts the tools/call of tool the Tasks upstream received.
func toolCalls(up *mcpcalltest.Server, tool string) int {
	n := 0
	for _, r := range up.Requests() {
		if r.Method == "tools/call" && r.Name == tool {
			n++
		}
	}
	return n
}

// runErrorCode is the error code of the run of a task (anonymous).
func runErrorCode(t *testing.T, env *testenv.Env, taskID string) string {
	t.Helper()
	id, err := runid.Unproject(taskID)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := runs.New(env.Client, env.Logger, runs.Options{Namespace: env.Namespace}).Get(t.Context(), auth.Anonymous(), id)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Error == nil {
		return ""
	}
	return snap.Error.Code
}
