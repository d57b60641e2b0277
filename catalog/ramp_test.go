package catalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/workflows"
)

// textIn and noteIn are the inputs of v1 and v2 of the ramped tool: each
// requires its own field.
type (
	textIn struct {
		Text string `json:"text" jsonschema:"the text"`
	}
	noteIn struct {
		Note string `json:"note" jsonschema:"the note"`
	}
)

// rampTools are v1 and v2 of a tool whose input changed: each answers the
// field it requires and the build that ran it.
func rampTools(name string) (v1, v2 workflows.Tool) {
	v1 = workflows.NewTool(name, "Version one.", func(_ workflow.Context, in textIn) (map[string]any, error) {
		return map[string]any{"got": in.Text, "build": "v1"}, nil
	})
	v2 = workflows.NewTool(name, "Version two.", func(_ workflow.Context, in noteIn) (map[string]any, error) {
		return map[string]any{"got": in.Note, "build": "v2"}, nil
	})
	return v1, v2
}

// TestLiveFollowsRamp: v2 of a tool, with a changed input, ramps at 50%
// beside the current v1. tools/list shows v1's spec; the calls the mount
// sends to v2 (every other one, by the test's draws) are checked against
// v2's input and run on v2, the others on v1, each pinned: no run gets
// input of the other version's spec. Arguments that fit only one
// version's input go to it, through MCP and through POST /runs. Once v2's worker stops, every call goes to
// v1, although Temporal still ramps v2.
func TestLiveFollowsRamp(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	tq := testenv.UniqueTaskQueue(t)
	name, deployment := unique("ramp"), unique("tools")
	var draws atomic.Int64
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{Rand: func() float64 {
		if draws.Add(1)%2 == 1 {
			return 0.25 // under the 50% ramp: v2
		}
		return 0.75
	}})
	if err != nil {
		t.Fatal(err)
	}
	url, _ := serveMount(t, env, live)
	c := &mcpClient{t: t, url: url, caps: taskCaps}

	t1, t2 := rampTools(name)
	runVersioned(t, env.Client, newRegistry(t, t1), tq, "w-v1", deployment, "v1")
	setCurrent(t, env.Client, deployment, "v1")
	v2 := runVersioned(t, env.Client, newRegistry(t, t2), tq, "w-v2", deployment, "v2")
	h := env.Client.WorkerDeploymentClient().GetHandle(deployment)
	visibility.Require(t, "ramp v2 at 50%", func(ctx context.Context) error {
		_, err := h.SetRampingVersion(ctx, client.WorkerDeploymentSetRampingVersionOptions{BuildID: "v2", Percentage: 50})
		return err
	})
	// The catalog sees the ramp and v2's worker once v2 published.
	eventually(t, waitBound, "v2 published", func() (bool, string) {
		if err := live.Refresh(ctx); err != nil {
			return false, err.Error()
		}
		return len(live.OtherVersions(name)) == 1, fmt.Sprintf("other versions %v", live.OtherVersions(name))
	})
	if d := c.toolNames()[name]["description"]; d != "Version one." {
		t.Fatalf("tools/list during the ramp shows %q, want the current version's", d)
	}

	args := map[string]map[string]any{"v1": {"text": "t"}, "v2": {"note": "n"}}
	call := func(wantBuild string, arguments map[string]any) {
		t.Helper()
		res := c.result("tools/call", map[string]any{"name": name, "arguments": arguments})
		taskID, _ := res["taskId"].(string)
		if taskID == "" {
			t.Fatalf("tools/call with %v: %v, want a task", arguments, res)
		}
		done := c.waitTask(taskID, "completed")["result"].(map[string]any)
		sc, _ := done["structuredContent"].(map[string]any)
		if sc["build"] != wantBuild || sc["got"] == "" {
			t.Errorf("call with %v answered %v, want build %s with its field", arguments, sc, wantBuild)
		}
		checkPinned(t, env, runOf(t, taskID), deployment, wantBuild)
	}
	// The draws alternate: v2, v1, v2, v1. Each call sends the arguments
	// of the version the ramp chose, then arguments that fit only the
	// other: they go to the version they fit.
	for i := range 4 {
		chosen := []string{"v2", "v1"}[i%2]
		other := map[string]string{"v1": "v2", "v2": "v1"}[chosen]
		if i < 2 {
			call(chosen, args[chosen])
		} else {
			call(other, args[other])
		}
	}

	// POST /runs follows the same rule: the draws go on (v2, v1); inputs
	// that fit only v1 go to v1 although the ramp chose v2, then inputs
	// that fit v2 go to v2 although it chose v1.
	rest := restServer(t, env, live)
	for _, build := range []string{"v1", "v2"} {
		checkPinned(t, env, postRun(t, env, rest, name, args[build]), deployment, build)
	}

	// v2 stops: Temporal still ramps it, the mount never sends it a call.
	if err := v2.stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitBound, "v2 gone from the catalog", func() (bool, string) {
		if err := live.Refresh(ctx); err != nil {
			return false, err.Error()
		}
		return onlyV1(live, name), "v2 still live"
	})
	for range 4 {
		call("v1", args["v1"])
	}
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv := d.Info.RoutingConfig.RampingVersion; rv == nil || rv.BuildID != "v2" || d.Info.RoutingConfig.RampingVersionPercentage != 50 {
		t.Fatalf("routing %+v: the test means v2 still ramping at 50%%", d.Info.RoutingConfig)
	}
}

// onlyV1 reports whether two calls in a row, one of each draw, go to v1.
func onlyV1(live *catalog.Live, name string) bool {
	for range 2 {
		tool, err := live.ForCall(context.Background(), name)
		if err != nil || tool.Pinned() == nil || tool.Pinned().BuildID != "v1" {
			return false
		}
	}
	return true
}

// checkPinned checks that the run ran on the build, pinned, with no
// override left (the one-time override cleared after its first workflow
// task).
func checkPinned(t *testing.T, env *testenv.Env, runID, deployment, build string) {
	t.Helper()
	desc, err := env.Client.DescribeWorkflowExecution(context.Background(), runID, "")
	if err != nil {
		t.Fatal(err)
	}
	vi := desc.GetWorkflowExecutionInfo().GetVersioningInfo()
	v := vi.GetDeploymentVersion()
	if v.GetDeploymentName() != deployment || v.GetBuildId() != build || vi.GetBehavior() != enumspb.VERSIONING_BEHAVIOR_PINNED {
		raw, _ := json.Marshal(vi)
		t.Errorf("run %s: versioning %s; want %s.%s, pinned", runID, raw, deployment, build)
	}
	if o := vi.GetVersioningOverride(); o != nil {
		t.Errorf("run %s: override %v left after its first workflow task", runID, o)
	}
}

// restServer serves the REST API over the catalog on a test HTTP server
// and returns its URL.
func restServer(t *testing.T, env *testenv.Env, source catalog.Source) string {
	t.Helper()
	h, err := restapi.New(restapi.Options{
		Runs:         runs.New(env.Client, env.Logger, runs.Options{Namespace: env.Namespace}),
		Authenticate: auth.AnonymousAuthenticator,
		Catalog:      source,
		Logger:       env.Logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// postRun starts a run of the tool with inputs through POST /runs, waits
// for its end and returns its run id (the workflow ID).
func postRun(t *testing.T, env *testenv.Env, url, tool string, inputs map[string]any) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"workflowId": tool, "inputs": inputs})
	resp, err := httpClient.Post(url+"/runs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var created struct {
		RunID string `json:"runId"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &created) != nil || created.RunID == "" {
		t.Fatalf("POST /runs with %v: %d %s", inputs, resp.StatusCode, raw)
	}
	var out map[string]any
	if err := env.Client.GetWorkflow(context.Background(), created.RunID, "").Get(context.Background(), &out); err != nil {
		t.Fatalf("run %s: %v", created.RunID, err)
	}
	return created.RunID
}
