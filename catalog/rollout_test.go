package catalog_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/workflows"
)

// rolloutInV1 is the input of build v1 of the rollout tool.
type rolloutInV1 struct {
	Order string `json:"order" jsonschema:"the order to ship"`
}

// rolloutInV2 is the input of build v2: a new required property.
type rolloutInV2 struct {
	Order    string `json:"order" jsonschema:"the order to ship"`
	Priority int    `json:"priority" jsonschema:"how urgent, 1 to 3"`
}

// rolloutOut is the output of both builds: which build ran the run, and
// its steps in order.
type rolloutOut struct {
	Build string   `json:"build"`
	Order string   `json:"order"`
	Steps []string `json:"steps"`
}

// rolloutOutV2 is v2's output: a new required property, which v1's
// results lack.
type rolloutOutV2 struct {
	rolloutOut
	Priority int `json:"priority"`
}

// rolloutSteps are the rollout tool's activities in the worker of build:
// each answers its name and the build of the worker that ran it.
type rolloutSteps struct{ build string }

// Record records the shipment.
func (s *rolloutSteps) Record(context.Context, string) (string, error) {
	return "record@" + s.build, nil
}

// Notify tells the customer.
func (s *rolloutSteps) Notify(context.Context, string) (string, error) {
	return "notify@" + s.build, nil
}

// rolloutTool is build v1 or v2 of a tool that asks for an approval
// between two activities: v1 approves, records, notifies; v2 takes a
// priority, answers it in its output, and notifies before the approval (a
// reordered step), which would fail the replay of v1's waiting runs.
func rolloutTool(name, build string) workflows.Tool {
	var acts *rolloutSteps // registered by the worker; only its methods' names count here
	approve := func(ctx workflow.Context, out *rolloutOut) error {
		d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "approve", Title: "Ship order " + out.Order + "?"})
		out.Steps = append(out.Steps, "approve:"+d.Action)
		return err
	}
	step := func(fn func(context.Context, string) (string, error)) func(workflow.Context, *rolloutOut) error {
		return func(ctx workflow.Context, out *rolloutOut) error {
			var s string
			err := workflow.ExecuteActivity(ctx, fn, out.Order).Get(ctx, &s)
			out.Steps = append(out.Steps, s)
			return err
		}
	}
	run := func(ctx workflow.Context, out rolloutOut, steps ...func(workflow.Context, *rolloutOut) error) (rolloutOut, error) {
		for _, s := range steps {
			if err := s(ctx, &out); err != nil {
				return out, err
			}
		}
		return out, nil
	}
	if build == "v1" {
		return workflows.NewTool(name, "Ship an order once approved.", func(ctx workflow.Context, in rolloutInV1) (rolloutOut, error) {
			return run(ctx, rolloutOut{Build: build, Order: in.Order}, approve, step(acts.Record), step(acts.Notify))
		}, workflows.Suspends())
	}
	return workflows.NewTool(name, "Ship an order once approved, by priority.", func(ctx workflow.Context, in rolloutInV2) (rolloutOutV2, error) {
		out, err := run(ctx, rolloutOut{Build: build, Order: in.Order}, step(acts.Notify), approve, step(acts.Record))
		return rolloutOutV2{rolloutOut: out, Priority: in.Priority}, err
	}, workflows.Suspends())
}

// inputProperties lists the properties of the tool's input schema in
// tools/list, or says that the tool is not listed.
func inputProperties(c *mcpClient, tool string) string {
	d := c.toolNames()[tool]
	if d == nil {
		return "not listed"
	}
	props, _ := d["inputSchema"].(map[string]any)["properties"].(map[string]any)
	var names []string
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// answerApproval approves the one open question of the task.
func answerApproval(c *mcpClient, taskID string) {
	c.t.Helper()
	res := c.waitTask(taskID, "input_required")
	reqs, _ := res["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		c.t.Fatalf("task %s asks %v, want one question", taskID, reqs)
	}
	for key := range reqs {
		c.result("tasks/update", map[string]any{"taskId": taskID, "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}}}})
	}
}

// checkRun checks a completed task's result and its run's version: the
// build that ran it, pinned, the steps in order, and no failed workflow
// task (a nondeterminism error fails one).
func checkRun(t *testing.T, env *testenv.Env, c *mcpClient, taskID, build string, steps ...string) {
	t.Helper()
	res := c.waitTask(taskID, "completed")["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if got := fmt.Sprint(sc["steps"]); sc["build"] != build || got != fmt.Sprint(steps) {
		t.Errorf("task %s answered %v, want build %s with steps %v", taskID, res, build, steps)
	}
	runID := runOf(t, taskID)
	desc, err := env.Client.DescribeWorkflowExecution(context.Background(), runID, "")
	if err != nil {
		t.Fatal(err)
	}
	vi := desc.GetWorkflowExecutionInfo().GetVersioningInfo()
	if vi.GetDeploymentVersion().GetBuildId() != build || vi.GetBehavior() != enumspb.VERSIONING_BEHAVIOR_PINNED {
		t.Errorf("run %s: version %v, behavior %s; want build %s, pinned", runID, vi.GetDeploymentVersion(), vi.GetBehavior(), build)
	}
	it := env.Client.GetWorkflowHistory(context.Background(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
			t.Errorf("run %s: workflow task failed (%s): %s", runID, a.GetCause(), a.GetFailure().GetMessage())
		}
	}
}

// waitDrained waits until Temporal reports the version drained: not
// current, and no open run pinned to it.
func waitDrained(t *testing.T, env *testenv.Env, deployment, buildID string) {
	t.Helper()
	h := env.Client.WorkerDeploymentClient().GetHandle(deployment)
	since := time.Now()
	bound := devtemporal.DrainageGracePeriod + 2*devtemporal.DrainageRefreshInterval + waitBound
	eventually(t, bound, buildID+" drained", func() (bool, string) {
		d, err := h.DescribeVersion(context.Background(), client.WorkerDeploymentDescribeVersionOptions{BuildID: buildID})
		if err != nil {
			return false, err.Error()
		}
		if di := d.Info.DrainageInfo; di != nil {
			return di.DrainageStatus == client.WorkerDeploymentVersionDrainageStatusDrained, fmt.Sprintf("drainage status %d", di.DrainageStatus)
		}
		return false, "no drainage info"
	})
	t.Logf("%s reported drained %s after its last run ended", buildID, time.Since(since).Round(10*time.Millisecond))
}

// TestE2EVersionedRollout: a tool's rollout with runs in flight, with real
// worker processes and an MCP client on the wire. Build v1 serves the tool
// and three of its runs wait for approval; build v2 (a new required input
// property, a reordered step) is deployed beside it and promoted with
// SetCurrentVersion: new calls list and run v2's spec, the three v1 runs
// are answered and complete on v1 with no failed workflow task, their
// results checked against v1's output schema, not v2's, and Temporal
// reports v1 drained; a call
// while v2's only worker is down is refused as unavailable although v1
// still runs; once a v2 worker is back, v1's worker stops, its runs
// drained, and their results are still checked against v1's schema.
func TestE2EVersionedRollout(t *testing.T) {
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	tool, deployment := unique("ship"), unique("shipping")
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{Namespace: env.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	url, svc := serveMount(t, env, live)
	c := &mcpClient{t: t, url: url, caps: taskCaps}
	version := func(build string) []string { return []string{envDeployment + "=" + deployment, envBuild + "=" + build} }
	listedWith := func(props string) func() (bool, string) {
		return func() (bool, string) {
			got := inputProperties(c, tool)
			return got == props, "input properties: " + got
		}
	}

	v1 := startWorkerProcess(t, env, tool, tq, version("v1")...)
	setCurrent(t, env.Client, deployment, "v1")
	eventually(t, 2*waitBound, "v1's spec listed", listedWith("order"))
	var waiting []string
	for i := range 3 {
		created := c.result("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"order": fmt.Sprintf("o%d", i)}})
		id, _ := created["taskId"].(string)
		c.waitTask(id, "input_required")
		waiting = append(waiting, id)
	}

	v2 := startWorkerProcess(t, env, tool, tq, version("v2")...)
	eventually(t, 2*waitBound, "v2 published beside v1", func() (bool, string) {
		st := publicationStatus(t, env.Client, tq, v2.identity)
		return st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
	})
	if ok, state := listedWith("order")(); !ok {
		t.Fatalf("before v2 is current: %s, want v1's spec", state)
	}
	promoted := setCurrent(t, env.Client, deployment, "v2")
	eventually(t, waitBound, "v2's spec listed", listedWith("order,priority"))
	t.Logf("v2's spec in tools/list %s after SetCurrentVersion returned", time.Since(promoted).Round(10*time.Millisecond))

	// v1's arguments no longer fit; v2's run on v2.
	r := c.call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"order": "o-old"}})
	if r.Result["isError"] != true || !strings.Contains(string(r.Raw), "priority") {
		t.Fatalf("a call with v1's arguments = %s, want a tool error naming priority", r.Raw)
	}
	created := c.result("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"order": "o-new", "priority": 2}})
	newID, _ := created["taskId"].(string)
	answerApproval(c, newID)
	checkRun(t, env, c, newID, "v2", "notify@v2", "approve:accept", "record@v2")

	// The v1 runs are answered and complete on v1.
	for _, id := range waiting {
		answerApproval(c, id)
	}
	for _, id := range waiting {
		checkRun(t, env, c, id, "v1", "approve:accept", "record@v1", "notify@v1")
	}
	waitDrained(t, env, deployment, "v1")

	// v2's only worker is killed: calls are refused, not sent to v1.
	killed := time.Now()
	v2.signal(t, syscall.SIGKILL)
	eventually(t, goneBound+waitBound, "v2's tool unavailable", func() (bool, string) {
		_, err := live.ForCall(context.Background(), tool)
		return err != nil && strings.Contains(err.Error(), `no live worker of version "v2"`), fmt.Sprint(err)
	})
	t.Logf("tool unavailable %s after v2's worker was killed", time.Since(killed).Round(10*time.Millisecond))
	before := svc.count()
	r = c.call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"order": "o-late", "priority": 1}})
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, `no live worker of version "v2"`) ||
		!strings.Contains(r.Error.Message, `live versions: "v1"`) {
		t.Fatalf("a call while v2 is down = %s, want -32602 naming v2 and the live v1", r.Raw)
	}
	if n := svc.count() - before; n != 0 {
		t.Errorf("%d runs asked for while v2 was down", n)
	}

	// A new v2 worker serves the tool again; v1's runs have drained: its
	// worker stops cleanly, and its runs' results are still checked
	// against v1's output schema.
	startWorkerProcess(t, env, tool, tq, version("v2")...)
	eventually(t, 2*waitBound, "v2 served again", func() (bool, string) {
		_, err := live.ForCall(context.Background(), tool)
		return err == nil, fmt.Sprint(err)
	})
	v1.signal(t, syscall.SIGTERM)
	if st := publicationStatus(t, env.Client, tq, v1.identity); st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Errorf("v1's publication still running after its worker stopped")
	}
	if err := live.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkRun(t, env, c, waiting[0], "v1", "approve:accept", "record@v1", "notify@v1")
}
