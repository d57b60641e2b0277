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
	"github.com/openwop/temporal-mcp/internal/app/datadir"
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
// v1, until they end. The rollout itself (set-current, ramp, describe) is
// run with the same command.
func TestServerMovesPinnedRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := newMoving(ctx, t)
	stopV1 := m.runBuild("v1", shipTool[shipIn](m.keep, "v1"), shipTool[shipIn](m.reshaped, "v1"), shipTool[shipIn](m.dropped, "v1"))
	m.versionsEventually("v1 current", "set-current", "-deployment", m.deployment, "-build-id", "v1")
	m.startServer()
	for _, tool := range []string{m.keep, m.reshaped, m.dropped} {
		m.call(tool)
	}
	stopV2 := m.runBuild("v2", shipTool[shipInNote](m.keep, "v2"), shipTool[shipInPriority](m.reshaped, "v2"))
	defer stopV2()
	m.promoteV2()

	// v1's workers stop early: its runs wait, and everything says for
	// which build, although v2's workers poll the task queue.
	stopV1()
	m.checkStalled()
	m.moveRuns()

	// The moved run is no longer stalled, is answered, and completes on v2.
	m.waitTask(m.keep, func(tk movedTask) error {
		if tk.Status != "input_required" || strings.Contains(tk.StatusMessage, "stalled") {
			return fmt.Errorf("status %s, message %q", tk.Status, tk.StatusMessage)
		}
		return nil
	})
	checkPinned(t, m.env, m.run(m.keep), "v2")
	m.approve(m.keep)
	done := m.waitTask(m.keep, status("completed"))
	if got := done.Result.StructuredContent; got != (shipOut{Build: "v2", Decision: "accept"}) {
		t.Errorf("the moved run answered %+v, want it finished by v2, accepted", got)
	}
	if st := m.getTask(m.reshaped); st.Status != "input_required" || !strings.Contains(st.StatusMessage, m.names[0]) {
		t.Errorf("a run refused the move: %s %q, want it still waiting for v1", st.Status, st.StatusMessage)
	}

	// Once no run waits for v1 any more, /healthz no longer names it.
	for _, tool := range []string{m.reshaped, m.dropped} {
		if err := m.env.Client.TerminateWorkflow(ctx, m.run(tool), "", "v1 is gone for good"); err != nil {
			t.Fatal(err)
		}
	}
	visibility.Require(t, "v1 no longer reported", func(context.Context) error {
		if _, h := health(t, m.addr); h.Status != "ok" {
			return fmt.Errorf("/healthz = %+v", h)
		}
		return nil
	})
}

// moving is the stack of TestServerMovesPinnedRuns: Temporal, the
// versioned workers of its deployment, the server, and the runs of its
// three tools (keep: v2 takes its runs; reshaped: v2 requires a new
// property; dropped: v2 does not serve it).
type moving struct {
	ctx                     context.Context
	t                       *testing.T
	env                     *testenv.Env
	tq, deployment          string
	keep, reshaped, dropped string
	// names are what a message about v1's outage names.
	names  []string
	logs   *observer.ObservedLogs
	logger *zap.Logger
	addr   string
	tasks  map[string]string // task id by tool
}

func newMoving(ctx context.Context, t *testing.T) *moving {
	core, logs := observer.New(zap.InfoLevel)
	m := &moving{ctx: ctx, t: t, env: testenv.Temporal(t), tq: testenv.UniqueTaskQueue(t), deployment: testenv.UniqueID("moving-"),
		keep: testenv.UniqueID("keep-"), reshaped: testenv.UniqueID("reshaped-"), dropped: testenv.UniqueID("dropped-"),
		logs: logs, logger: zap.New(zapcore.NewTee(core, testenv.Logger().Core())), tasks: map[string]string{}}
	m.names = []string{fmt.Sprintf("build %q of worker deployment %q", "v1", m.deployment), fmt.Sprintf("task queue %q", m.tq)}
	return m
}

// runBuild runs a worker of build with tools until stop is called.
func (m *moving) runBuild(build string, tools ...workflows.Tool) (stop func()) {
	reg, err := workflows.NewRegistry(tools)
	if err != nil {
		m.t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(m.ctx)
	done := make(chan error, 1)
	go func() {
		done <- reg.Run(wctx, m.env.Client, m.tq, workflows.WorkerOptions{
			Worker: worker.Options{Identity: build + "@" + m.tq}, DeploymentName: m.deployment, BuildID: build,
		})
	}()
	return func() {
		wcancel()
		if err := <-done; err != nil {
			m.t.Errorf("worker %s: %v", build, err)
		}
	}
}

// versions runs `openwop-server versions args...` as cmd/server does:
// its exit status, stdout and stderr.
func (m *moving) versions(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := operator.Main(m.ctx, append([]string{"versions"}, args...),
		envMap{config.EnvTemporalAddress: m.env.Address, config.EnvTemporalNamespace: m.env.Namespace}, &out, &errOut)
	return code, out.String(), errOut.String()
}

// versionsEventually runs the command until it succeeds (Temporal refuses
// a version none of whose workers has polled yet) and returns its output.
func (m *moving) versionsEventually(what string, args ...string) string {
	var out string
	visibility.Require(m.t, what, func(context.Context) error {
		code, o, e := m.versions(args...)
		if out = o; code != operator.ExitOK {
			return fmt.Errorf("exit %d: %s", code, e)
		}
		return nil
	})
	return out
}

// startServer starts the server's assembly, with no worker of its own.
func (m *moving) startServer() {
	cfg := config.Config{HTTPAddr: "127.0.0.1:0", TaskQueue: m.tq, Remote: true,
		Client: client.Options{HostPort: m.env.Address, Namespace: m.env.Namespace}}
	srv, err := app.NewServer(app.ServerOptions{Authenticate: auth.AnonymousAuthenticator})
	if err != nil {
		m.t.Fatal(err)
	}
	a, err := app.Start(m.ctx, cfg, m.logger, srv.Parts())
	if err != nil {
		m.t.Fatalf("Start: %v", err)
	}
	m.t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	m.addr = a.HTTPAddr
}

// call starts a run of tool and waits for its question.
func (m *moving) call(tool string) {
	visibility.Require(m.t, "a run of "+tool, func(context.Context) error {
		r := mcpCall(m.t, m.addr, "tools/call", tool, map[string]any{"name": tool, "arguments": map[string]any{"order": "o-" + tool}})
		var created struct {
			TaskID string `json:"taskId"`
		}
		if r.Error != nil || json.Unmarshal(r.Result, &created) != nil || created.TaskID == "" {
			return fmt.Errorf("tools/call: %+v %s", r.Error, r.Result)
		}
		m.tasks[tool] = created.TaskID
		return nil
	})
	m.waitTask(tool, status("input_required"))
}

// run is the run id of tool's run.
func (m *moving) run(tool string) string { return testsupport.RunOf(m.t, m.tasks[tool]) }

// getTask reads tool's run with tasks/get.
func (m *moving) getTask(tool string) movedTask {
	m.t.Helper()
	id := m.tasks[tool]
	r := mcpCall(m.t, m.addr, "tasks/get", id, map[string]any{"taskId": id})
	var tk movedTask
	if r.Error != nil || json.Unmarshal(r.Result, &tk) != nil {
		m.t.Fatalf("tasks/get %s: %+v %s", id, r.Error, r.Result)
	}
	return tk
}

// waitTask reads tool's run until check passes.
func (m *moving) waitTask(tool string, check func(movedTask) error) movedTask {
	m.t.Helper()
	var tk movedTask
	visibility.Require(m.t, "the run of "+tool, func(context.Context) error {
		tk = m.getTask(tool)
		return check(tk)
	})
	return tk
}

// status checks a task's status.
func status(want string) func(movedTask) error {
	return func(tk movedTask) error {
		if tk.Status != want {
			return fmt.Errorf("status %s (%s), want %s", tk.Status, tk.StatusMessage, want)
		}
		return nil
	}
}

// approve accepts the open questions of tool's run with tasks/update.
func (m *moving) approve(tool string) {
	id := m.tasks[tool]
	for key := range m.getTask(tool).InputRequests {
		r := mcpCall(m.t, m.addr, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}}}})
		if r.Error != nil {
			m.t.Fatalf("tasks/update: %+v", r.Error)
		}
	}
}

// promoteV2 ramps v2 beside v1, describes both, then makes v2 current,
// with the command.
func (m *moving) promoteV2() {
	if out := m.versionsEventually("v2 ramping", "ramp", "-deployment", m.deployment, "-build-id", "v2", "-percentage", "25"); !strings.Contains(out, "v2 ramping at 25%") {
		m.t.Errorf("versions ramp said %q", out)
	}
	visibility.Require(m.t, "describe the versions", func(context.Context) error {
		code, out, e := m.versions("describe", "-deployment", m.deployment)
		if code != operator.ExitOK {
			return errors.New(e)
		}
		// v1 is current with the three runs pinned to it, and names its
		// tools; v2 ramps.
		v1 := versionLine(out, "v1")
		if !strings.HasPrefix(v1, "v1 current - 3 ") || !strings.Contains(v1, m.keep) || !strings.Contains(versionLine(out, "v2"), "ramping 25%") {
			return fmt.Errorf("versions describe:\n%s", out)
		}
		return nil
	})
	if out := m.versionsEventually("v2 current", "set-current", "-deployment", m.deployment, "-build-id", "v2"); !strings.Contains(out, "current version v2 (was v1)") {
		m.t.Errorf("versions set-current said %q", out)
	}
	visibility.Require(m.t, "list the deployments", func(context.Context) error {
		code, out, e := m.versions("describe")
		if code != operator.ExitOK || versionLine(out, m.deployment) != m.deployment+" v2 none" {
			return fmt.Errorf("versions describe: exit %d\n%s%s", code, out, e)
		}
		return nil
	})
}

// checkStalled checks that tasks/get, /healthz and the log name the build
// and deployment the runs wait for, and that the task queue, which v2's
// workers poll, is not reported unserved.
func (m *moving) checkStalled() {
	t := m.t
	m.waitTask(m.keep, func(tk movedTask) error {
		for _, want := range m.names {
			if !strings.Contains(tk.StatusMessage, want) {
				return fmt.Errorf("status %s, message %q; want it to name %s", tk.Status, tk.StatusMessage, want)
			}
		}
		return nil
	})
	_, h := health(t, m.addr)
	wantVersion := app.VersionHealth{TaskQueue: m.tq, DeploymentName: m.deployment, BuildID: "v1"}
	if h.Status != "degraded" || h.Workers == nil || !slices.Contains(h.Workers.Versions, wantVersion) ||
		slices.Contains(h.Workers.Unserved, m.tq) || !strings.Contains(h.Workers.Message, m.names[0]) || !strings.Contains(h.Workers.Message, "move-runs") {
		t.Errorf("/healthz = %+v, want degraded naming %+v", h, wantVersion)
	}
	if w := logged(m.logs, zapcore.WarnLevel, m.names[0]); len(w) != 1 || w[0].ContextMap()["buildId"] != "v1" || w[0].ContextMap()["deploymentName"] != m.deployment {
		t.Errorf("WARN lines naming v1: %+v, want one with its deployment and build", w)
	}
	if w := logged(m.logs, zapcore.WarnLevel, outageWarning); len(w) != 0 {
		t.Errorf("WARN lines of a task queue outage: %+v, want none: v2's workers poll it", w)
	}
}

// moveRuns runs move-runs with -dry-run (nothing moves), then without:
// keep's run moves to v2, the two others are refused, naming why, and
// stay pinned to v1.
func (m *moving) moveRuns() {
	t := m.t
	for _, dry := range []bool{true, false} {
		args := []string{"move-runs", "-deployment", m.deployment, "-build-id", "v1"}
		verb := "moved"
		if dry {
			args, verb = append(args, "-dry-run"), "would move"
		}
		code, out, e := m.versions(args...)
		for _, want := range []string{
			fmt.Sprintf("%s %s (tool %s) from build v1 to build v2", verb, m.run(m.keep), m.keep),
			fmt.Sprintf("refused %s: its arguments do not fit the new build's input schema", m.run(m.reshaped)), "priority",
			fmt.Sprintf("refused %s: build \"v2\" does not serve tool %q", m.run(m.dropped), m.dropped),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("versions %s: output\n%s\nwant %q", strings.Join(args, " "), out, want)
			}
		}
		if code != operator.ExitFailed || !strings.Contains(e, "2 of 3 runs pinned to build \"v1\" refused") {
			t.Errorf("versions %s = exit %d, stderr %q; want 1 naming the refusals", strings.Join(args, " "), code, e)
		}
		if dry {
			checkPinned(t, m.env, m.run(m.keep), "v1")
		}
	}
	for _, tool := range []string{m.reshaped, m.dropped} {
		checkPinned(t, m.env, m.run(tool), "v1")
	}
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

// TestVersionsEmbeddedServer: without TEMPORAL_ADDRESS, the operator
// commands connect to the Temporal server of the process that holds the
// data directory, as it published it there; with no such process they
// fail, saying so.
func TestVersionsEmbeddedServer(t *testing.T) {
	env := testenv.Temporal(t)
	dir := t.TempDir()
	describe := func() (int, string) {
		var out, errOut bytes.Buffer
		code := operator.Main(context.Background(), []string{"versions", "describe"}, envMap{config.EnvDataDir: dir}, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	if code, out := describe(); code != operator.ExitFailed || !strings.Contains(out, "no openwop-server runs with data directory") {
		t.Fatalf("versions describe with no server = %d %q", code, out)
	}
	lock, err := datadir.TryLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()
	if err := lock.Publish(datadir.Holder{TemporalAddress: env.Address, Namespace: env.Namespace}); err != nil {
		t.Fatal(err)
	}
	if code, out := describe(); code != operator.ExitOK || !strings.HasPrefix(out, "DEPLOYMENT") {
		t.Fatalf("versions describe with the data directory's server = %d %q", code, out)
	}
}
