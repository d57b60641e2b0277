package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/operator"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/workflows"
)

// shipIn is the input of build v1 of the moving tools.
type shipIn struct {
	Order string `json:"order" jsonschema:"the order to ship"`
}

// shipInNote is build v2's input of the tool whose runs may move: a new
// optional property, which v1's arguments still fit.
type shipInNote struct {
	Order string `json:"order" jsonschema:"the order to ship"`
	Note  string `json:"note,omitempty" jsonschema:"a note for the courier"`
}

// shipInPriority is build v2's input of the tool whose runs may not move:
// a new required property, which v1's arguments lack.
type shipInPriority struct {
	Order    string `json:"order" jsonschema:"the order to ship"`
	Priority int    `json:"priority" jsonschema:"how urgent, 1 to 3"`
}

// shipOut says which build finished the run, and the decision.
type shipOut struct {
	Build    string `json:"build"`
	Decision string `json:"decision"`
}

// shipTool is a tool that asks for an approval and answers the build
// whose worker finished it; both builds make the same commands.
func shipTool[In any](name, build string) workflows.Tool {
	return workflows.NewTool(name, "Ship an order once approved.", func(ctx workflow.Context, _ In) (shipOut, error) {
		d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "approve", Title: "Ship it?"})
		return shipOut{Build: build, Decision: d.Action}, err
	}, workflows.Suspends())
}

// movedTask is the part of a tasks/get result the test reads.
type movedTask struct {
	Status        string         `json:"status"`
	StatusMessage string         `json:"statusMessage"`
	InputRequests map[string]any `json:"inputRequests"`
	Result        struct {
		StructuredContent shipOut `json:"structuredContent"`
	} `json:"result"`
}

// TestServerMovesPinnedRuns: runs pinned to build v1 of a Worker
// Deployment wait for approval when v1's workers stop early, v2 being
// current and polling the same task queue. tasks/get, /healthz and the log
// name the deployment and the build the runs wait for. `versions
// move-runs` (the binary's operator command) moves the run whose tool v2
// serves with arguments v2's schema takes to v2, where it is answered and
// completes; it refuses, naming why, the run whose arguments v2's schema
// refuses and the run of a tool v2 no longer serves, which stay pinned to
// v1. The rollout itself (set-current, ramp, describe) is run with the
// same command.
func TestServerMovesPinnedRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	deployment := testenv.UniqueID("moving-")
	keep, reshaped, dropped := testenv.UniqueID("keep-"), testenv.UniqueID("reshaped-"), testenv.UniqueID("dropped-")
	core, logs := observer.New(zap.InfoLevel)
	logger := zap.New(zapcore.NewTee(core, testenv.Logger().Core()))

	runBuild := func(build string, tools ...workflows.Tool) (stop func()) {
		reg, err := workflows.NewRegistry(tools)
		if err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- reg.Run(wctx, env.Client, tq, workflows.WorkerOptions{
				Worker: worker.Options{Identity: build + "@" + tq}, DeploymentName: deployment, BuildID: build,
			})
		}()
		return func() {
			wcancel()
			if err := <-done; err != nil {
				t.Errorf("worker %s: %v", build, err)
			}
		}
	}
	versions := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := operator.Main(ctx, append([]string{"versions"}, args...),
			envMap{config.EnvTemporalAddress: env.Address, config.EnvTemporalNamespace: env.Namespace}, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	// Temporal refuses a version none of whose workers has polled yet.
	versionsEventually := func(what string, args ...string) string {
		var out string
		visibility.Require(t, what, func(context.Context) error {
			code, o, e := versions(args...)
			if out = o; code != operator.ExitOK {
				return fmt.Errorf("exit %d: %s", code, e)
			}
			return nil
		})
		return out
	}

	stopV1 := runBuild("v1", shipTool[shipIn](keep, "v1"), shipTool[shipIn](reshaped, "v1"), shipTool[shipIn](dropped, "v1"))
	versionsEventually("v1 current", "set-current", "-deployment", deployment, "-build-id", "v1")

	cfg := config.Config{HTTPAddr: "127.0.0.1:0", TaskQueue: tq, Remote: true,
		Client: client.Options{HostPort: env.Address, Namespace: env.Namespace}}
	srv, err := app.NewServer(app.ServerOptions{Authenticate: auth.AnonymousAuthenticator})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(ctx, cfg, logger, srv.Parts())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = a.Shutdown(context.Background()) }()
	getTask := func(id string) movedTask {
		t.Helper()
		r := mcpCall(t, a.HTTPAddr, "tasks/get", id, map[string]any{"taskId": id})
		var tk movedTask
		if r.Error != nil || json.Unmarshal(r.Result, &tk) != nil {
			t.Fatalf("tasks/get %s: %+v %s", id, r.Error, r.Result)
		}
		return tk
	}
	waitTask := func(id string, check func(movedTask) error) movedTask {
		t.Helper()
		var tk movedTask
		visibility.Require(t, "task "+id, func(context.Context) error {
			tk = getTask(id)
			return check(tk)
		})
		return tk
	}
	status := func(want string) func(movedTask) error {
		return func(tk movedTask) error {
			if tk.Status != want {
				return fmt.Errorf("status %s (%s), want %s", tk.Status, tk.StatusMessage, want)
			}
			return nil
		}
	}
	tasks := map[string]string{}
	for _, tool := range []string{keep, reshaped, dropped} {
		visibility.Require(t, "a run of "+tool, func(context.Context) error {
			r := mcpCall(t, a.HTTPAddr, "tools/call", tool, map[string]any{"name": tool, "arguments": map[string]any{"order": "o-" + tool}})
			var created struct {
				TaskID string `json:"taskId"`
			}
			if r.Error != nil || json.Unmarshal(r.Result, &created) != nil || created.TaskID == "" {
				return fmt.Errorf("tools/call: %+v %s", r.Error, r.Result)
			}
			tasks[tool] = created.TaskID
			return nil
		})
		waitTask(tasks[tool], status("input_required"))
	}

	// v2 deployed beside v1, ramped, then promoted, with the command.
	stopV2 := runBuild("v2", shipTool[shipInNote](keep, "v2"), shipTool[shipInPriority](reshaped, "v2"))
	defer stopV2()
	if out := versionsEventually("v2 ramping", "ramp", "-deployment", deployment, "-build-id", "v2", "-percentage", "25"); !strings.Contains(out, "v2 ramping at 25%") {
		t.Errorf("versions ramp said %q", out)
	}
	visibility.Require(t, "describe the versions", func(context.Context) error {
		code, out, e := versions("describe", "-deployment", deployment)
		if code != operator.ExitOK {
			return errors.New(e)
		}
		// v1 is current with the three runs pinned to it, and names its
		// tools; v2 ramps.
		v1 := versionLine(out, "v1")
		if !strings.HasPrefix(v1, "v1 current - 3 ") || !strings.Contains(v1, keep) || !strings.Contains(versionLine(out, "v2"), "ramping 25%") {
			return fmt.Errorf("versions describe:\n%s", out)
		}
		return nil
	})
	if out := versionsEventually("v2 current", "set-current", "-deployment", deployment, "-build-id", "v2"); !strings.Contains(out, "current version v2 (was v1)") {
		t.Errorf("versions set-current said %q", out)
	}

	visibility.Require(t, "list the deployments", func(context.Context) error {
		code, out, e := versions("describe")
		if code != operator.ExitOK || versionLine(out, deployment) != deployment+" v2 none" {
			return fmt.Errorf("versions describe: exit %d\n%s%s", code, out, e)
		}
		return nil
	})

	// v1's workers stop early: its runs wait, and everything says for
	// which build, although v2's workers poll the task queue.
	stopV1()
	names := []string{fmt.Sprintf("build %q of worker deployment %q", "v1", deployment), fmt.Sprintf("task queue %q", tq)}
	waitTask(tasks[keep], func(tk movedTask) error {
		for _, want := range names {
			if !strings.Contains(tk.StatusMessage, want) {
				return fmt.Errorf("status %s, message %q; want it to name %s", tk.Status, tk.StatusMessage, want)
			}
		}
		return nil
	})
	_, h := health(t, a.HTTPAddr)
	wantVersion := app.VersionHealth{TaskQueue: tq, DeploymentName: deployment, BuildID: "v1"}
	if h.Status != "degraded" || h.Workers == nil || !slices.Contains(h.Workers.Versions, wantVersion) ||
		slices.Contains(h.Workers.Unserved, tq) || !strings.Contains(h.Workers.Message, names[0]) || !strings.Contains(h.Workers.Message, "move-runs") {
		t.Errorf("/healthz = %+v, want degraded naming %+v", h, wantVersion)
	}
	if w := logged(logs, zapcore.WarnLevel, names[0]); len(w) != 1 || w[0].ContextMap()["buildId"] != "v1" || w[0].ContextMap()["deploymentName"] != deployment {
		t.Errorf("WARN lines naming v1: %+v, want one with its deployment and build", w)
	}
	if w := logged(logs, zapcore.WarnLevel, outageWarning); len(w) != 0 {
		t.Errorf("WARN lines of a task queue outage: %+v, want none: v2's workers poll it", w)
	}

	// A dry run moves nothing; then the runs move, but for those v2's
	// spec refuses.
	run := func(tool string) string { return testsupport.RunOf(t, tasks[tool]) }
	for _, dry := range []bool{true, false} {
		args := []string{"move-runs", "-deployment", deployment, "-build-id", "v1"}
		verb := "moved"
		if dry {
			args, verb = append(args, "-dry-run"), "would move"
		}
		code, out, e := versions(args...)
		for _, want := range []string{
			fmt.Sprintf("%s %s (tool %s) from build v1 to build v2", verb, run(keep), keep),
			fmt.Sprintf("refused %s: its arguments do not fit the new build's input schema", run(reshaped)), "priority",
			fmt.Sprintf("refused %s: build \"v2\" does not serve tool %q", run(dropped), dropped),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("versions %s: output\n%s\nwant %q", strings.Join(args, " "), out, want)
			}
		}
		if code != operator.ExitFailed || !strings.Contains(e, "2 of 3 runs pinned to build \"v1\" refused") {
			t.Errorf("versions %s = exit %d, stderr %q; want 1 naming the refusals", strings.Join(args, " "), code, e)
		}
		if dry {
			checkPinned(t, env, run(keep), "v1")
		}
	}
	for _, tool := range []string{reshaped, dropped} {
		checkPinned(t, env, run(tool), "v1")
	}

	// The moved run is no longer stalled, is answered, and completes on v2.
	waitTask(tasks[keep], func(tk movedTask) error {
		if tk.Status != "input_required" || strings.Contains(tk.StatusMessage, "stalled") {
			return fmt.Errorf("status %s, message %q", tk.Status, tk.StatusMessage)
		}
		return nil
	})
	checkPinned(t, env, run(keep), "v2")
	for key := range getTask(tasks[keep]).InputRequests {
		r := mcpCall(t, a.HTTPAddr, "tasks/update", tasks[keep], map[string]any{"taskId": tasks[keep], "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}}}})
		if r.Error != nil {
			t.Fatalf("tasks/update: %+v", r.Error)
		}
	}
	done := waitTask(tasks[keep], status("completed"))
	if got := done.Result.StructuredContent; got != (shipOut{Build: "v2", Decision: "accept"}) {
		t.Errorf("the moved run answered %+v, want it finished by v2, accepted", got)
	}
	if st := getTask(tasks[reshaped]); st.Status != "input_required" || !strings.Contains(st.StatusMessage, names[0]) {
		t.Errorf("a run refused the move: %s %q, want it still waiting for v1", st.Status, st.StatusMessage)
	}

	// Once no run waits for v1 any more, /healthz no longer names it.
	for _, tool := range []string{reshaped, dropped} {
		if err := env.Client.TerminateWorkflow(ctx, run(tool), "", "v1 is gone for good"); err != nil {
			t.Fatal(err)
		}
	}
	visibility.Require(t, "v1 no longer reported", func(context.Context) error {
		if _, h := health(t, a.HTTPAddr); h.Status != "ok" {
			return fmt.Errorf("/healthz = %+v", h)
		}
		return nil
	})
}

// versionLine is the line of build in the output of versions describe,
// its columns separated by single spaces.
func versionLine(out, build string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == build {
			return strings.Join(f, " ")
		}
	}
	return ""
}

// checkPinned checks that the run is pinned to build, by its behaviour or
// by an override.
func checkPinned(t *testing.T, env *testenv.Env, runID, build string) {
	t.Helper()
	desc, err := env.Client.DescribeWorkflowExecution(context.Background(), runID, "")
	if err != nil {
		t.Fatal(err)
	}
	vi := desc.GetWorkflowExecutionInfo().GetVersioningInfo()
	got := vi.GetDeploymentVersion().GetBuildId()
	if p := vi.GetVersioningOverride().GetPinned(); p != nil {
		got = p.GetVersion().GetBuildId()
	} else if vi.GetBehavior() != enumspb.VERSIONING_BEHAVIOR_PINNED {
		got = ""
	}
	if got != build {
		t.Errorf("run %s is pinned to %q (%v), want %q", runID, got, vi, build)
	}
}
