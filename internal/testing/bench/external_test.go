package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// The external mode (issue 21): Temporal in a process of its own (the
// devserver command on a SQLite file), the tools' worker in another (the
// test binary again, TestBenchWorkerChild), and the mount-only server
// (cmd/server with TEMPORAL_ADDRESS and OPENWOP_WORKER=off) in a third, so
// that the adapter is measured alone: its CPU time per call against the
// raw SDK program's (this process, which runs nothing else while the raw
// side runs), its resident memory idle, with many open tasks and after
// the load. The mount-only server is the lean build (go build -tags
// mountonly, which links no Temporal server); the stock build's idle RSS
// is shown beside it.

// Targets of issue 21 for the external mode.
const (
	targetBlocking    = 1.10 // blocking tools/call latency, mount / ExecuteWorkflow + Get
	targetBlockingCPU = 1.50 // server CPU per blocking call, mount / raw SDK program
	targetIdleMiB     = 40   // mount-only RSS idle
	targetOpenFlat    = 1.25 // RSS at the most open tasks / at the fewest
	plainTool         = "bench-echo"
	plainQueue        = "bench-plain"
	externalQueue     = "bench-ext"
	externalEnv       = "OPENWOP_BENCH_EXTERNAL"
	externalChildEnv  = "OPENWOP_BENCH_EXTERNAL_CHILD"
	workerEnv         = "OPENWOP_BENCH_WORKER"
	externalPrefix    = "BENCH-EXTERNAL"
)

// BenchmarkExternal measures the external mode alone (BenchmarkIssue11
// runs it too, unless OPENWOP_BENCH_EXTERNAL=0):
//
//	go test -run '^$' -bench External -benchtime 1x -timeout 60m ./internal/testing/bench
func BenchmarkExternal(b *testing.B) {
	fmt.Fprintf(os.Stdout, "\nexternal mode: load average %s\n", loadavg())
	t := &table{}
	if err := rowsExternal(t); err != nil {
		b.Fatal(err)
	}
	fmt.Println()
	t.print(os.Stdout)
	fmt.Fprintf(os.Stdout, "\nload average at the end: %s\n", loadavg())
}

// rowsExternal runs the external mode in a child process (which must run
// no Temporal server of its own: its CPU time is the raw side's) and adds
// its rows.
func rowsExternal(t *table) error {
	var rows [][]string
	if err := runChild("TestExternalChild", []string{externalChildEnv + "=1"}, externalPrefix, &rows); err != nil {
		return fmt.Errorf("external mode: %w", err)
	}
	t.rows = append(t.rows, rows...)
	return nil
}

// TestExternalChild is the process of the external mode (skipped unless
// BenchmarkExternal or BenchmarkIssue11 runs it).
func TestExternalChild(t *testing.T) {
	if os.Getenv(externalChildEnv) == "" {
		t.Skip("BenchmarkExternal runs this in a child process")
	}
	dir := t.TempDir()
	bin, err := binaries(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := &deployment{dir: dir}
	defer d.stop()
	tb := &table{}
	if err := d.measure(tb, bin); err != nil {
		t.Fatal(err)
	}
	fmt.Println(jsonLine(externalPrefix, tb.rows))
}

// binaries returns the directory of the devserver, cmd/server (stock) and
// cmd/server (-tags mountonly) binaries: OPENWOP_BENCH_BIN when set, else
// dir, where they are built.
func binaries(dir string) (string, error) {
	if b := os.Getenv("OPENWOP_BENCH_BIN"); b != "" {
		return b, nil
	}
	for _, b := range [][]string{
		{"devserver", "./internal/cmd/devserver"},
		{"server", "./cmd/server"},
		{"server-mountonly", "-tags", "mountonly", "./cmd/server"},
	} {
		args := append([]string{"build", "-o", filepath.Join(dir, b[0])}, b[1:]...)
		cmd := exec.Command("go", args...)
		cmd.Dir = "../../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir, nil
}

// deployment is the processes of the external mode.
type deployment struct {
	dir   string
	procs []*exec.Cmd
}

// start starts a process, its output in dir/<name>.log.
func (d *deployment) start(name string, env []string, bin string, args ...string) (*exec.Cmd, error) {
	f, err := os.Create(filepath.Join(d.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); f.Close() }()
	d.procs = append(d.procs, cmd)
	return cmd, nil
}

// stop ends every process it started, the last first.
func (d *deployment) stop() {
	for i := len(d.procs) - 1; i >= 0; i-- {
		p := d.procs[i]
		_ = p.Process.Signal(syscall.SIGTERM)
		deadline := time.Now().Add(15 * time.Second)
		for p.Process.Signal(syscall.Signal(0)) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		_ = p.Process.Kill()
	}
	d.procs = nil
}

// measure starts Temporal, the worker and the mount-only servers, and
// measures every row of the external mode.
func (d *deployment) measure(tb *table, bin string) error {
	n := envInt("OPENWOP_BENCH_N", defaultN)
	port, err := testsupport.FreePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if _, err := d.start("temporal", nil, filepath.Join(bin, "devserver"), "-db", filepath.Join(d.dir, "temporal.db"), "-port", strconv.Itoa(port)); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, calls, err := dialReady(ctx, addr)
	if err != nil {
		return fmt.Errorf("temporal: %w (see %s)", err, d.dir)
	}
	defer c.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if _, err := d.start("worker", []string{workerEnv + "=" + addr}, self, "-test.run=^TestBenchWorkerChild$", "-test.timeout=0"); err != nil {
		return err
	}
	toolsFile, err := writeToolsFile(d.dir)
	if err != nil {
		return err
	}
	stock, _, err := d.startMount(ctx, "server-stock", filepath.Join(bin, "server"), addr, toolsFile)
	if err != nil {
		return err
	}
	lean, url, err := d.startMount(ctx, "server", filepath.Join(bin, "server-mountonly"), addr, toolsFile)
	if err != nil {
		return err
	}
	time.Sleep(10 * time.Second) // idle: the start-up's garbage collected, the catalog read
	stockRSS, leanRSS := pidRSSKiB(stock.Process.Pid), pidRSSKiB(lean.Process.Pid)
	d.procs = d.procs[:len(d.procs)-2]
	d.procs = append(d.procs, lean)
	_ = stock.Process.Signal(syscall.SIGTERM)
	tb.add("mount-only RSS idle (Temporal external, no worker; -tags mountonly)", "the stock cmd/server, mount-only",
		fmt.Sprintf("%.1f MiB", float64(leanRSS)/1024), fmt.Sprintf("%.1f MiB", float64(stockRSS)/1024),
		fmt.Sprintf("%.2f×", float64(leanRSS)/float64(max(stockRSS, 1))), "", "", "",
		fmt.Sprintf("≤ %d MiB", targetIdleMiB), verdict(leanRSS <= targetIdleMiB*1024), "10 s after ready")

	s := &stack{c: c, calls: calls, tq: externalQueue, caller: auth.Anonymous(),
		mounts: []*mcpClient{newMCPClient(url)}}
	if s.spec, err = lookupSpec(ctx, c, approvalTool); err != nil {
		return err
	}
	mountPID := lean.Process.Pid
	if err := rowBlocking(context.Background(), s, tb, n, mountPID); err != nil {
		return err
	}
	if err := rowLifecycleCPU(context.Background(), s, tb, n, mountPID); err != nil {
		return err
	}
	if err := rowOpenTasks(context.Background(), s, tb, mountPID, leanRSS); err != nil {
		return err
	}
	idle := envInt("OPENWOP_BENCH_IDLE", 60)
	time.Sleep(time.Duration(idle) * time.Second)
	after, peak := pidRSSKiB(mountPID), pidStatusKiB(mountPID, "VmHWM:")
	tb.add(fmt.Sprintf("mount RSS after the load and %d s idle", idle), "idle before the load",
		fmt.Sprintf("%.1f MiB", float64(after)/1024), fmt.Sprintf("%.1f MiB", float64(leanRSS)/1024),
		fmt.Sprintf("%.2f×", float64(after)/float64(max(leanRSS, 1))), "", "", "", "(no target)", "",
		fmt.Sprintf("peak during the load %.1f MiB", float64(peak)/1024))
	return nil
}

// dialReady dials Temporal (counting the calls made about each workflow)
// once it answers for its default namespace.
func dialReady(ctx context.Context, addr string) (client.Client, *callLog, error) {
	calls := &callLog{byID: map[string][]string{}}
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: devtemporal.SDKLogger(zap.NewNop()),
			ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(calls.intercept)}}})
		if err == nil {
			_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
			if err == nil {
				return c, calls, nil
			}
			c.Close()
		}
		select {
		case <-ctx.Done():
			return nil, nil, err
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// writeToolsFile declares the plain tool, served by TestBenchWorkerChild.
func writeToolsFile(dir string) (string, error) {
	raw, err := json.Marshal([]signals.ToolSpec{{
		Name: plainTool, Description: "Answers its arguments (a trivial plain workflow).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		TaskSupport: signals.TaskOptional, TaskQueue: plainQueue, WorkflowType: plainTool, Contract: signals.ContractPlain,
	}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "tools.json")
	return path, os.WriteFile(path, raw, 0o644)
}

// startMount starts a mount-only server and waits until it lists both
// tools; it returns the process and the MCP endpoint's URL.
func (d *deployment) startMount(ctx context.Context, name, bin, addr, toolsFile string) (*exec.Cmd, string, error) {
	port, err := testsupport.FreePort()
	if err != nil {
		return nil, "", err
	}
	data := filepath.Join(d.dir, "data-"+name)
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, "", err
	}
	cmd, err := d.start(name, []string{"TEMPORAL_ADDRESS=" + addr, "OPENWOP_WORKER=off", "OPENWOP_LOG_LEVEL=warn",
		"OPENWOP_HTTP_ADDR=127.0.0.1:" + strconv.Itoa(port), "OPENWOP_DATA_DIR=" + data, "OPENWOP_TOOLS_FILE=" + toolsFile}, bin)
	if err != nil {
		return nil, "", err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	m := newMCPClient(url)
	for {
		res, _, err := m.raw("tools/list", map[string]any{})
		if err == nil && strings.Contains(string(res), `"`+plainTool+`"`) && strings.Contains(string(res), `"`+approvalTool+`"`) {
			return cmd, url, nil
		}
		select {
		case <-ctx.Done():
			return nil, "", fmt.Errorf("%s not ready: %v (see %s)", name, err, filepath.Join(d.dir, name+".log"))
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// lookupSpec reads a tool's spec from the catalog once a worker published it.
func lookupSpec(ctx context.Context, c client.Client, name string) (signals.ToolSpec, error) {
	live, err := catalog.NewLive(c, catalog.LiveOptions{Logger: zap.NewNop()})
	if err != nil {
		return signals.ToolSpec{}, err
	}
	for {
		if err := live.Refresh(ctx); err == nil {
			if t, err := live.Lookup(ctx, name); err == nil {
				return t.Spec(), nil
			}
		}
		select {
		case <-ctx.Done():
			return signals.ToolSpec{}, fmt.Errorf("tool %s never reached the catalog", name)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestBenchWorkerChild is the worker process of the external mode (skipped
// unless it runs it): the example tools on externalQueue, published, and
// the plain tool's workflow on plainQueue, until SIGTERM.
func TestBenchWorkerChild(t *testing.T) {
	addr := os.Getenv(workerEnv)
	if addr == "" {
		t.Skip("the external mode runs this in a child process")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	worker.SetStickyWorkflowCacheSize(workflows.DefaultWorkflowCacheSize)
	nop := zap.NewNop()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: devtemporal.SDKLogger(nop)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg, err := conformancetools.Registry(tools.NewActivities(nop, tools.ActivityOptions{OutputDir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, plainQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(echo, workflow.RegisterOptions{Name: plainTool})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := reg.Run(ctx, c, externalQueue, workflows.WorkerOptions{}); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// echo is the plain tool's workflow: it answers its arguments.
func echo(_ workflow.Context, args map[string]any) (map[string]any, error) { return args, nil }
