package mcpmount

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/workflows"
)

// The environment of an agent worker process (TestMCPCallWorkerProcess).
const (
	envAgentAddress   = "OPENWOP_MCPCALL_TEST_ADDRESS" // unset: not a worker process
	envAgentNamespace = "OPENWOP_MCPCALL_TEST_NAMESPACE"
	envAgentQueue     = "OPENWOP_MCPCALL_TEST_QUEUE"
	envAgentURL       = "OPENWOP_MCPCALL_TEST_URL"
)

// TestMCPCallWorkerProcess is not a test: started by
// TestIntegrationMCPCallSurvivesWorkerKill, it is a worker of call_tool
// until it is killed.
func TestMCPCallWorkerProcess(t *testing.T) {
	addr := os.Getenv(envAgentAddress)
	if addr == "" {
		t.Skip("run by TestIntegrationMCPCallSurvivesWorkerKill as a worker process")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	c, err := temporalclient.DialContext(ctx, temporalclient.Options{HostPort: addr, Namespace: os.Getenv(envAgentNamespace)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg, err := callingRegistry(os.Getenv(envAgentURL))
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Run(ctx, c, os.Getenv(envAgentQueue), workflows.WorkerOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationMCPCallSurvivesWorkerKill: the agent's worker (another
// process) is killed with SIGKILL while the agent follows the inner
// task; a new worker picks the run up from its history, and the call
// completes once, the inner tool having run once.
func TestIntegrationMCPCallSurvivesWorkerKill(t *testing.T) {
	agentQueue := testenv.UniqueTaskQueue(t) + "-agent"
	s := newCallingStack(t, agentQueue)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMCPCallWorkerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envAgentAddress+"="+s.env.Address, envAgentNamespace+"="+s.env.Namespace,
		envAgentQueue+"="+agentQueue, envAgentURL+"="+s.URL+"/mcp")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // killed: an error
		close(exited)
	}()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()

	c := s.client(t, "ka", tasksCaps())
	task := callTool(t, c, "call_tool", map[string]any{"tool": "slow_compute", "args": map[string]any{"seconds": 3, "label": "kill"}})
	id := task["taskId"].(string)
	inner := innerCall(t, s, id)
	if inner.Task == nil {
		t.Fatalf("the inner call answered %+v, want a task", inner)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	killed := time.Now()
	reg, err := callingRegistry(s.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	s.env.NewWorker(t, agentQueue, reg.Register)

	// A poll in flight at the kill is retried after its 30 s timeout.
	var done map[string]any
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		done = wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil))
		if done["status"] == "completed" || time.Now().After(deadline) {
			break
		}
	}
	if got := text(t, done["result"]); got != `Computed "kill" in 3 second(s).` {
		t.Fatalf("agent's result %q (status %v), want slow_compute's", got, done["status"])
	}
	t.Logf("the run completed %s after the kill", time.Since(killed).Round(time.Millisecond))
	if n := countActivities(t, s, runOf(t, id), "MCPCallTool"); n != 1 {
		t.Errorf("the agent's run scheduled %d tools/call activities, want 1", n)
	}
	desc, err := s.env.Client.DescribeWorkflowExecution(t.Context(), runOf(t, inner.Task.ID), "")
	if err != nil {
		t.Fatal(err)
	}
	query := "WorkflowType = 'slow_compute' AND TaskQueue = '" + desc.GetWorkflowExecutionInfo().GetTaskQueue() + "'"
	var runs int
	for deadline := time.Now().Add(10 * time.Second); runs == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := s.env.Client.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: s.env.Namespace, Query: query})
		if err != nil {
			t.Fatal(err)
		}
		runs = len(resp.GetExecutions())
	}
	if runs != 1 {
		t.Errorf("slow_compute ran %d times on its task queue, want once", runs)
	}
}

// countActivities counts the activities of type name the run scheduled.
func countActivities(t *testing.T, s *stack, run, name string) int {
	t.Helper()
	n := 0
	it := s.env.Client.GetWorkflowHistory(t.Context(), run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == name {
			n++
		}
	}
	return n
}
