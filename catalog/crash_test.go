package catalog_test

// The catalog when a tool's workers go away: real worker processes (this
// test binary, started again as a worker of the test's Temporal server)
// killed with SIGKILL or stopped with SIGTERM, and an MCP client on the
// wire that watches tools/list and calls the tool.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/workflows"
)

// goneBound is the catalog's promise: a tool whose workers are all gone
// leaves tools/list within it (docs/catalog.md#liveness).
const goneBound = 15 * time.Second

// The environment of a worker process (TestWorkerProcess).
const (
	envWorker    = "OPENWOP_CATALOG_TEST_WORKER" // the tool's name; unset: not a worker process
	envAddress   = "OPENWOP_CATALOG_TEST_ADDRESS"
	envNamespace = "OPENWOP_CATALOG_TEST_NAMESPACE"
	envQueue     = "OPENWOP_CATALOG_TEST_QUEUE"
	envIdentity  = "OPENWOP_CATALOG_TEST_IDENTITY"
	// envDefaults set: the worker is the README's, with no option (no
	// client heartbeat interval, WorkerOptions{}, its default identity).
	envDefaults = "OPENWOP_CATALOG_TEST_DEFAULTS"
	// envSlow set: the tool's run does slowWork in an activity.
	envSlow = "OPENWOP_CATALOG_TEST_SLOW"
	// envBuild set: the worker is that build (rolloutTool) of the Worker
	// Deployment envDeployment.
	envBuild      = "OPENWOP_CATALOG_TEST_BUILD"
	envDeployment = "OPENWOP_CATALOG_TEST_DEPLOYMENT"
)

// slowWork is how long the activity of a slow tool works.
const slowWork = 4 * time.Second

// slowTool is a tool whose run works slowWork in its activity (slowDays),
// then answers as echoTool does.
func slowTool(name string) workflows.Tool {
	return workflows.NewTool(name, "Work a while, then echo the text.", func(ctx workflow.Context, in echoIn) (map[string]any, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		if err := workflow.ExecuteActivity(ctx, slowDays).Get(ctx, nil); err != nil {
			return nil, err
		}
		return map[string]any{"echo": in.Text}, nil
	})
}

// slowDays works for slowWork, or until ctx ends.
func slowDays(ctx context.Context) error {
	select {
	case <-time.After(slowWork):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestWorkerProcess is not a test: started by startWorkerProcess, it is a
// worker serving one echo tool until SIGTERM (a clean stop) or SIGKILL.
func TestWorkerProcess(t *testing.T) {
	name := os.Getenv(envWorker)
	if name == "" {
		t.Skip("run by the crash tests as a worker process")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	copts := client.Options{HostPort: os.Getenv(envAddress), Namespace: os.Getenv(envNamespace)}
	wopts := workflows.WorkerOptions{}
	if os.Getenv(envDefaults) == "" {
		copts.WorkerHeartbeatInterval = catalog.WorkerHeartbeatInterval
		wopts.Worker = worker.Options{Identity: os.Getenv(envIdentity)}
	}
	c, err := client.DialContext(ctx, copts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tool, acts := echoTool(name, "Echo the text.", "process"), []any(nil)
	if os.Getenv(envSlow) != "" {
		tool, acts = slowTool(name), []any{slowDays}
	}
	if build := os.Getenv(envBuild); build != "" {
		tool, acts = rolloutTool(name, build), []any{&rolloutSteps{build: build}}
		wopts.DeploymentName, wopts.BuildID = os.Getenv(envDeployment), build
	}
	reg, err := workflows.NewRegistry([]workflows.Tool{tool}, acts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Run(ctx, c, os.Getenv(envQueue), wopts); err != nil {
		t.Fatal(err)
	}
}

// workerProcess is a worker process of one tool.
type workerProcess struct {
	cmd      *exec.Cmd
	identity string
	done     chan error
}

// startWorkerProcess starts this test binary as a worker of tool on
// taskQueue, killed at the end of the test if still running; extra are
// more variables of its environment (envDefaults, envSlow).
func startWorkerProcess(t *testing.T, env *testenv.Env, tool, taskQueue string, extra ...string) *workerProcess {
	t.Helper()
	p := &workerProcess{identity: unique("process"), done: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1")
	p.cmd.Env = append(os.Environ(), envWorker+"="+tool, envAddress+"="+env.Address, envNamespace+"="+env.Namespace,
		envQueue+"="+taskQueue, envIdentity+"="+p.identity)
	p.cmd.Env = append(p.cmd.Env, extra...)
	p.cmd.Stdout, p.cmd.Stderr = os.Stderr, os.Stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(extra, envDefaults+"=1") {
		// The default identity of workflows.Registry.Run.
		host, _ := os.Hostname()
		p.identity = fmt.Sprintf("%d@%s@%s", p.cmd.Process.Pid, host, taskQueue)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		p.done <- nil
	})
	return p
}

// signal sends sig and waits for the process to end.
func (p *workerProcess) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("worker process did not end within 30 s of %v", sig)
	}
}

// waitHeartbeating waits until Temporal has two heartbeats of the worker
// process (the second one tells the interval the catalog judges it by).
func waitHeartbeating(t *testing.T, env *testenv.Env, p *workerProcess, taskQueue string) {
	t.Helper()
	eventually(t, 4*catalog.WorkerHeartbeatInterval+waitBound, "the worker's heartbeat interval known", func() (bool, string) {
		resp, err := env.Client.WorkflowService().ListWorkers(context.Background(), &workflowservice.ListWorkersRequest{
			Namespace: env.Namespace, Query: fmt.Sprintf("TaskQueue = '%s' AND WorkerIdentity = '%s'", taskQueue, p.identity),
		})
		if err != nil {
			return false, err.Error()
		}
		//lint:ignore SA1019 the full heartbeat is only in workers_info (see catalog/workers.go).
		infos := resp.GetWorkersInfo()
		for _, info := range infos {
			if info.GetWorkerHeartbeat().GetElapsedSinceLastHeartbeat().AsDuration() > 0 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d heartbeat records", len(infos))
	})
}

// waitGone polls tools/list until the tool is not listed and returns how
// long that took from since; it fails the test after goneBound.
func waitGone(t *testing.T, c *mcpClient, tool string, since time.Time) time.Duration {
	t.Helper()
	for {
		if c.toolNames()[tool] == nil {
			return time.Since(since)
		}
		if time.Since(since) > goneBound {
			t.Fatalf("tool %q still listed %s after its last worker went away", tool, goneBound)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// restAnswer is an HTTP status and body.
type restAnswer struct {
	StatusCode int
	body       string
}

// restCreateRun asks the REST API over the same run service and catalog to
// start a run of tool.
func restCreateRun(t *testing.T, env *testenv.Env, svc runs.Backend, live catalog.Source, tool string) restAnswer {
	t.Helper()
	api, err := restapi.New(restapi.Options{Runs: svc, Catalog: live, Authenticate: auth.AnonymousAuthenticator, Logger: env.Logger})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	resp, err := httpClient.Post(srv.URL+"/runs", "application/json", strings.NewReader(`{"workflowId":"`+tool+`","inputs":{"text":"hi"}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return restAnswer{resp.StatusCode, string(raw)}
}

// When every worker of a tool is gone, by SIGKILL or by a clean stop, the
// tool leaves tools/list within 15 s, and a call is then refused at once as
// unavailable, naming the tool and its task queue, with no run started. A
// crashed worker's publication does not keep the tool listed while another
// worker polls the same queue.
func TestE2EWorkersGone(t *testing.T) {
	env := testenv.Temporal(t)
	for _, tc := range []struct {
		name string
		// stops, in order, the workers to stop: SIGKILL or SIGTERM. The
		// window is measured from the last one.
		stops []os.Signal
		// readme: the workers are the README's, with no option set.
		readme bool
	}{
		{"kill -9 of the only worker", []os.Signal{syscall.SIGKILL}, false},
		{"clean stop of the only worker", []os.Signal{syscall.SIGTERM}, false},
		{"kill -9 of one worker, then a clean stop of the other", []os.Signal{syscall.SIGKILL, syscall.SIGTERM}, false},
		{"kill -9 of the only worker, a README worker with no option", []os.Signal{syscall.SIGKILL}, true},
		{"clean stop of the only worker, a README worker with no option", []os.Signal{syscall.SIGTERM}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tq := testenv.UniqueTaskQueue(t)
			tool := unique("echo")
			live, err := catalog.NewLive(env.Client, catalog.LiveOptions{Namespace: env.Namespace})
			if err != nil {
				t.Fatal(err)
			}
			url, svc := serveMount(t, env, live)
			c := &mcpClient{t: t, url: url, caps: taskCaps}
			var procs []*workerProcess
			var extra []string
			if tc.readme {
				extra = append(extra, envDefaults+"=1")
			}
			for range tc.stops {
				procs = append(procs, startWorkerProcess(t, env, tool, tq, extra...))
			}
			eventually(t, 2*waitBound, "the tool listed", func() (bool, string) {
				return c.toolNames()[tool] != nil, ""
			})
			for _, p := range procs {
				waitHeartbeating(t, env, p, tq)
			}
			for i, sig := range tc.stops[:len(tc.stops)-1] {
				procs[i].signal(t, sig)
			}
			// The others still serve the tool: it stays listed and callable.
			if len(procs) > 1 {
				time.Sleep(goneBound)
				if c.toolNames()[tool] == nil {
					t.Fatalf("tool unlisted while a worker still serves it")
				}
			}
			last := procs[len(procs)-1]
			stopped := time.Now()
			last.signal(t, tc.stops[len(tc.stops)-1])
			window := waitGone(t, c, tool, stopped)
			t.Logf("%s: tool gone from tools/list %s after the last worker's end", tc.name, window.Round(10*time.Millisecond))

			before := svc.count()
			asked := time.Now()
			for mode, caps := range map[string]map[string]any{"task": taskCaps, "blocking": blockingCaps} {
				r := (&mcpClient{t: t, url: url, caps: caps}).call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"text": "hi"}})
				if r.Error == nil || r.Error.Code != -32602 {
					t.Fatalf("%s call after the workers left = HTTP %d %s, want -32602", mode, r.Status, r.Raw)
				}
				for _, want := range []string{fmt.Sprintf("tool %q is unavailable", tool), fmt.Sprintf("%q", tq)} {
					if !strings.Contains(r.Error.Message, want) {
						t.Fatalf("%s call refused with %q, which does not say %s", mode, r.Error.Message, want)
					}
				}
				if want := fmt.Sprintf(`"error":{"code":-32602,"message":%q,"data":{"unavailable":{"taskQueues":[%q],"tool":%q}}}`,
					r.Error.Message, tq, tool); !strings.Contains(string(r.Raw), want) {
					t.Fatalf("%s call refused with %s, want the error %s", mode, r.Raw, want)
				}
			}
			rest := restCreateRun(t, env, svc, live, tool)
			if rest.StatusCode != http.StatusServiceUnavailable || !strings.Contains(rest.body, "workflow_unavailable") ||
				!strings.Contains(rest.body, fmt.Sprintf(`\"%s\"`, tq)) {
				t.Fatalf("REST createRun after the workers left = %d %s, want 503 workflow_unavailable naming %q", rest.StatusCode, rest.body, tq)
			}
			if d := time.Since(asked); d > 5*time.Second {
				t.Fatalf("the refusals took %s, want them at once", d)
			}
			if n := svc.count() - before; n != 0 {
				t.Fatalf("the mount asked for %d runs after the workers left", n)
			}
			if n := countRuns(t, env.Client, fmt.Sprintf("TaskQueue = '%s'", tq)); n != 0 {
				t.Fatalf("%d runs on the task queue of a tool without workers", n)
			}
			_, err = live.Lookup(context.Background(), tool)
			var unav *catalog.UnavailableError
			if !errors.As(err, &unav) || len(unav.TaskQueues) != 1 || unav.TaskQueues[0] != tq {
				t.Fatalf("Lookup = %v, want an *UnavailableError naming task queue %q", err, tq)
			}
		})
	}
}
