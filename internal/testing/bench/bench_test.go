package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/workflows"
)

// Targets of issue 11.
const (
	targetGet       = 1.10 // tasks/get, working or terminal
	targetUpdate    = 1.15 // tasks/update until applied vs Signal + Query
	targetCancel    = 1.20 // tasks/cancel vs Signal + RequestCancel
	targetCall      = 1.50 // tools/call → CreateTaskResult vs ExecuteWorkflow
	targetCalls     = 8    // Temporal calls per full lifecycle
	targetRate      = 0.95 // throughput, mount / raw
	targetRSSKiB    = 40   // RSS growth per open task
	targetEvicted   = 3.0  // tasks/get evicted / cached
	targetFlatGet   = 1.25 // tasks/get at 1000 events / at 10 ("flat")
	targetInline    = 1.10 // a 5 ms tool's result, Tasks client / blocking call
	warmups         = 3    // untimed calls of each side before a row
	historySignals  = 250  // ignored signals that grow a history to ~1000 events
	defaultN        = 100
	defaultSeconds  = 3
	defaultOpenRuns = 10000
	defaultPaced    = 20                   // seconds per level of the paced rows
	onlyEnv         = "OPENWOP_BENCH_ONLY" // "paced": only the paced rows (for profiling them); "short": only the short-call row; "pace": only the long-run row
	maxTargetRate   = 32                   // the throughput target applies up to this many clients
)

// BenchmarkIssue11 measures every row of issue 11 once (b.N is ignored)
// and prints the table. This process serves the stack; the client process
// (TestBenchClientChild) measures the latency and throughput rows, and a
// fresh process the memory row. See the package documentation for the
// command.
func BenchmarkIssue11(b *testing.B) {
	n := envInt("OPENWOP_BENCH_N", defaultN)
	seconds := envInt("OPENWOP_BENCH_SECONDS", defaultSeconds)
	open := envInt("OPENWOP_BENCH_OPEN", defaultOpenRuns)
	out := os.Stdout
	fmt.Fprintf(out, "\nissue 11 benchmark: %s, %d CPUs (GOMAXPROCS %d), load average %s; n=%d samples per row, %ds throughput blocks\n",
		runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), loadavg(), n, seconds)
	fmt.Fprintf(out, "worker workflow cache %d, embedded history cache %d; clients in a process of their own\n\n",
		workflows.DefaultWorkflowCacheSize, devtemporal.HistoryCacheSize)

	s := newStack(b, b.TempDir(), true)
	rows, err := runClient(s, s.serveControl(b))
	t := &table{rows: rows}
	if err != nil {
		fmt.Fprintln(out)
		t.print(out)
		b.Fatal(err)
	}
	if open > 0 {
		if err := rowMemory(t, open, n); err != nil {
			b.Fatal(err)
		}
	}
	if envInt(externalEnv, 1) != 0 {
		if err := rowsExternal(t); err != nil {
			b.Fatal(err)
		}
	}
	fmt.Fprintln(out)
	t.print(out)
	fmt.Fprintf(out, "\nload average at the end: %s\n", loadavg())
}

// measure runs the latency and throughput rows against s, from the
// client process.
func measure(ctx context.Context, s *stack, n, seconds int) (*table, error) {
	t := &table{}
	if os.Getenv(onlyEnv) == "paced" {
		if k := envInt("OPENWOP_BENCH_PREOPEN", 0); k > 0 {
			if _, err := parallel(k, 16, func(int) (string, error) { tk, _, err := s.waiting(ctx, s.mcp()); return tk, err }); err != nil {
				return t, err
			}
		}
		return t, rowsPaced(ctx, s, t, time.Duration(envInt("OPENWOP_BENCH_PACED", defaultPaced))*time.Second)
	}
	switch os.Getenv(onlyEnv) {
	case "short":
		return t, rowShortCall(ctx, s, t, n)
	case "pace":
		return t, rowPaceLong(ctx, s, t, n)
	}
	for _, row := range []func(context.Context, *stack, *table, int) error{
		rowGetWorking, rowMCPLayer, rowGetTerminal, rowGetTerminalCold, rowToolsCall, rowUpdate, rowCancelKnown, rowCancelUnknown,
		rowHistoryLength, rowLifecycleCalls, rowShortCall, rowPaceLong,
	} {
		if err := row(ctx, s, t, n); err != nil {
			return t, err
		}
	}
	for _, c := range []int{1, 8, 32, 128} {
		if err := rowThroughput(ctx, s, t, c, time.Duration(seconds)*time.Second); err != nil {
			return t, err
		}
	}
	if paced := envInt("OPENWOP_BENCH_PACED", defaultPaced); paced > 0 {
		if err := rowsPaced(ctx, s, t, time.Duration(paced)*time.Second); err != nil {
			return t, err
		}
	}
	return t, nil
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// waiting starts a task over the mount and waits until it asks for the
// approval; it returns the taskId and the input key.
func (s *stack) waiting(ctx context.Context, m *mcpClient) (task, key string, err error) {
	if task, err = m.callTool(approvalTool, map[string]any{}); err != nil {
		return "", "", err
	}
	key, err = waitInput(ctx, m, task)
	return task, key, err
}

// callsOf runs f and returns the Temporal calls it made about id.
func (s *stack) callsOf(id string, f func() error) (string, int, error) {
	server, here := s.callLists(id)
	err := f()
	server2, here2 := s.callLists(id)
	calls := append(server2[len(server):], here2[len(here):]...)
	return count(calls), len(calls), err
}

func warm(f func(int) error) error {
	for i := 0; i < warmups; i++ {
		if err := f(i); err != nil {
			return err
		}
	}
	return nil
}

// rowGetWorking reads a working run, over the stock mount (tracing off)
// and over a mount with tracing on (tracedMount), against the same raw
// query, the three sides interleaved.
func rowGetWorking(ctx context.Context, s *stack, t *table, n int) error {
	m := s.mcp()
	task, _, err := s.waiting(ctx, m)
	if err != nil {
		return err
	}
	traced, stop, err := s.tracedMount()
	if err != nil {
		return err
	}
	defer stop()
	tracedTask, _, err := s.waiting(ctx, traced)
	if err != nil {
		return err
	}
	id := runOf(task)
	get := func(m *mcpClient, task string) func(int) error {
		return func(int) error {
			res, err := m.get(task)
			if err == nil && res.Status != "input_required" {
				err = fmt.Errorf("tasks/get = %v", res.Status)
			}
			return err
		}
	}
	mount, on := get(m, task), get(traced, tracedTask)
	raw := func(int) error {
		snap, err := s.rawQuery(ctx, id)
		if err == nil && len(snap.Interrupts) == 0 {
			err = errors.New("no interrupt")
		}
		return err
	}
	if err := errors.Join(warm(mount), warm(raw), warm(on)); err != nil {
		return err
	}
	mc, _, _ := s.callsOf(id, func() error { return mount(0) })
	rc, _, _ := s.callsOf(id, func() error { return raw(0) })
	oc, _, _ := s.callsOf(runOf(tracedTask), func() error { return on(0) })
	out, err := interleaveAll(n, nil, []side{{op: mount}, {op: raw}, {op: on}}, nil)
	if err != nil {
		return err
	}
	ms, rs, ts := out[0], out[1], out[2]
	t.latency("tasks/get, working run", "QueryWorkflow", ms, rs, targetGet, mc+" | "+rc)
	t.add("  same, tracing on (every span sampled, exported to a no-op)", "QueryWorkflow", msf(ts.median()), msf(rs.median()),
		fmt.Sprintf("%.2f×", ratio(ts.median(), rs.median())), msf(ts.p90()), msf(rs.p90()), fmt.Sprintf("%.2f×", ratio(ts.p90(), rs.p90())),
		"", "", fmt.Sprintf("%s | %s; on / off %.2f× (p90 %.2f×)", oc, rc, ratio(ts.median(), ms.median()), ratio(ts.p90(), ms.p90())))
	return nil
}

// rowShortCall measures how long a client that declares the Tasks
// extension waits for the result of a 5 ms tool (answered inline, or,
// were it answered with a task, polled as its pollIntervalMs says) against
// a blocking call of the same tool; and, as the baseline of before inline
// answers, the same call of the fixture that turns its inline wait off
// (conformance-delay), which the client polls.
func rowShortCall(_ context.Context, s *stack, t *table, n int) error {
	tasks := s.mcp()
	blocking := &mcpClient{url: tasks.url, http: tasks.http, meta: blockingMeta}
	args := map[string]any{"name": shortTool, "arguments": map[string]any{"delayMs": 5}}
	polled := map[string]any{"name": "conformance-delay", "arguments": map[string]any{"delayMs": 5}}
	withTasks := func(args map[string]any) func(int) error {
		return func(int) error { return resultAsTasksClient(tasks, args) }
	}
	block := func(int) error {
		res, err := blocking.call("tools/call", args)
		if err == nil && (res.ResultType != "complete" || res.IsError) {
			err = fmt.Errorf("blocking tools/call %s = %+v, want its result", shortTool, res)
		}
		return err
	}
	inline, poll := withTasks(args), withTasks(polled)
	if err := errors.Join(warm(inline), warm(block), warm(poll)); err != nil {
		return err
	}
	out, err := interleaveAll(n, nil, []side{{op: inline}, {op: block}, {op: poll}}, nil)
	if err != nil {
		return err
	}
	t.latency("result of a 5 ms tool, Tasks client (inline)", "blocking call", out[0], out[1], targetInline, "")
	t.latency("  same, inline wait off (polled: before)", "blocking call", out[2], out[1], 0, "")
	return nil
}

// resultAsTasksClient calls a tool as a client that declares the Tasks
// extension does: a result answered inline is held at once; a task is
// polled, pollIntervalMs apart, until it completed.
func resultAsTasksClient(c *mcpClient, args map[string]any) error {
	res, err := c.call("tools/call", args)
	if err == nil && res.ResultType == "task" {
		id := res.TaskID
		for err == nil && res.Status != "completed" {
			time.Sleep(time.Duration(res.PollIntervalMs) * time.Millisecond)
			res, err = c.get(id)
		}
		return err
	}
	if err == nil && (res.ResultType != "complete" || res.IsError) {
		err = fmt.Errorf("tools/call %v = %+v, want its result", args["name"], res)
	}
	return err
}

// rowMCPLayer measures what the HTTP and MCP layer costs alone: tasks/get
// of another tenant's task is answered "not found" before any Temporal
// call. Compared with the working-run row's query.
func rowMCPLayer(ctx context.Context, s *stack, t *table, n int) error {
	m := s.mcp()
	foreign := runid.Project("other-tenant/AAAAAAAAAAAAAAAAAAAAAAAA")
	task, _, err := s.waiting(ctx, m)
	if err != nil {
		return err
	}
	id := runOf(task)
	mount := func(int) error {
		_, err := m.call("tasks/get", map[string]any{"taskId": foreign})
		if err == nil || !strings.Contains(err.Error(), "not found") {
			return fmt.Errorf("tasks/get of a foreign task: %v", err)
		}
		return nil
	}
	raw := func(int) error {
		_, err := s.rawQuery(ctx, id)
		return err
	}
	if err := errors.Join(warm(mount), warm(raw)); err != nil {
		return err
	}
	ms, rs, err := interleave(n, nil, mount, raw, nil)
	if err != nil {
		return err
	}
	t.add("  (HTTP + MCP layer alone: tasks/get refused before Temporal)", "QueryWorkflow", msf(ms.median()), msf(rs.median()),
		fmt.Sprintf("%.2f×", ratio(ms.median(), rs.median())), msf(ms.p90()), msf(rs.p90()), "", "", "", "none | Query")
	return nil
}

// rowGetTerminal reads a completed run again and again, as a client that
// polls a finished task does: the service remembers that the run closed.
func rowGetTerminal(ctx context.Context, s *stack, t *table, n int) error {
	m := s.mcp()
	id, err := s.mountLifecycle(ctx, m)
	if err != nil {
		return err
	}
	task := runid.Project(id)
	mount := func(int) error {
		res, err := m.get(task)
		if err == nil && res.Status != "completed" {
			err = fmt.Errorf("tasks/get = %v", res.Status)
		}
		return err
	}
	raw := func(int) error {
		_, err := s.rawTerminal(ctx, id)
		return err
	}
	if err := errors.Join(warm(mount), warm(raw)); err != nil {
		return err
	}
	mc, _, _ := s.callsOf(id, func() error { return mount(0) })
	rc, _, _ := s.callsOf(id, func() error { return raw(0) })
	ms, rs, err := interleave(n, nil, mount, raw, nil)
	if err != nil {
		return err
	}
	t.latency("tasks/get, terminal run, read before", "Describe + close event", ms, rs, targetGet, mc+" | "+rc)
	return nil
}

// rowGetTerminalCold reads each completed run once, from a service that
// never saw it (another replica, or after a restart).
func rowGetTerminalCold(ctx context.Context, s *stack, t *table, n int) error {
	cold := s.mounts[2]
	var ids []string
	for i := 0; i < n+warmups+1; i++ {
		id, err := s.mountLifecycle(ctx, s.mcp())
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	mount := func(i int) error {
		res, err := cold.get(runid.Project(ids[i]))
		if err == nil && res.Status != "completed" {
			err = fmt.Errorf("tasks/get = %v", res.Status)
		}
		return err
	}
	raw := func(i int) error {
		_, err := s.rawTerminal(ctx, ids[i])
		return err
	}
	if err := errors.Join(warm(mount), warm(raw)); err != nil {
		return err
	}
	ids = ids[warmups:]
	mc, _, _ := s.callsOf(ids[0], func() error { return mount(0) })
	rc, _, _ := s.callsOf(ids[0], func() error { return raw(0) })
	ids = ids[1:]
	ms, rs, err := interleave(n, nil, mount, raw, nil)
	if err != nil {
		return err
	}
	t.latency("tasks/get, terminal run, first read by this process", "Describe + close event", ms, rs, targetGet, mc+" | "+rc)
	return nil
}

func rowToolsCall(ctx context.Context, s *stack, t *table, n int) error {
	for vi, v := range startVariants {
		m := s.mounts[vi]
		var task, rawID string
		mount := func(int) (err error) {
			task, err = m.callTool(approvalTool, map[string]any{})
			return err
		}
		raw := func(int) (err error) {
			rawID, err = s.rawStart(ctx)
			return err
		}
		// Each side's run gets its first workflow task done (untimed)
		// before the other side runs, so neither side's background work
		// lands in the other's timing: the mount's by an immediate
		// tasks/get, which must resolve, the raw side's by a query.
		var immediate samples
		statuses := map[string]int{}
		settleMount := func() error {
			start := time.Now()
			res, err := m.get(task)
			immediate = append(immediate, time.Since(start))
			if err != nil {
				return fmt.Errorf("immediate tasks/get: %w", err)
			}
			statuses[fmt.Sprint(res.Status)]++
			return nil
		}
		settleRaw := func() error {
			_, err := s.rawQuery(ctx, rawID)
			return err
		}
		for i := 0; i < warmups; i++ {
			if err := errors.Join(mount(i), settleMount(), raw(i), settleRaw()); err != nil {
				return err
			}
		}
		calls := count(s.callsAbout(runOf(task))[:1]) + " | " + count(s.callsAbout(rawID)[:1])
		immediate, statuses = nil, map[string]int{}
		ms, rs, err := interleaveSides(n, nil,
			side{mount, func(int) error { return settleMount() }},
			side{raw, func(int) error { return settleRaw() }}, nil)
		if err != nil {
			return err
		}
		name := "tools/call → CreateTaskResult: " + v.name
		if vi == 0 {
			t.latency(name, "ExecuteWorkflow", ms, rs, targetCall, calls)
		} else {
			t.add(name, "ExecuteWorkflow", msf(ms.median()), msf(rs.median()), fmt.Sprintf("%.2f×", ratio(ms.median(), rs.median())),
				msf(ms.p90()), msf(rs.p90()), fmt.Sprintf("%.2f×", ratio(ms.p90(), rs.p90())), "(option)", "", calls)
		}
		var st []string
		for k, c := range statuses {
			st = append(st, fmt.Sprintf("%s %d/%d", k, c, n))
		}
		t.add("  then an immediate tasks/get", "", msf(immediate.median()), "", "", msf(immediate.p90()), "", "",
			"resolves", verdict(len(immediate) == n), strings.Join(st, ", "))
	}
	// What a raw program waits for until its new run answers a query, for
	// reference. (An eager start needs a worker on the program's own
	// client, which a client process does not run.)
	var eq samples
	for i := 0; i < n; i++ {
		start := time.Now()
		id, err := s.rawStart(ctx)
		if err == nil {
			_, err = s.rawQuery(ctx, id)
		}
		if err != nil {
			return err
		}
		eq = append(eq, time.Since(start))
	}
	t.add("  (raw ExecuteWorkflow + QueryWorkflow)", "", "", msf(eq.median()), "", "", msf(eq.p90()), "", "", "", "")
	return nil
}

func rowUpdate(ctx context.Context, s *stack, t *table, n int) error {
	m := s.mcp()
	type pair struct{ task, key, rawID, rawKey string }
	var cur pair
	var tasks []pair
	prepare := func(int) error {
		task, key, err := s.waiting(ctx, m)
		if err != nil {
			return err
		}
		rid, rkey, err := s.rawWaiting(ctx)
		cur = pair{task, key, rid, rkey}
		tasks = append(tasks, cur)
		return err
	}
	mount := func(int) error { return m.approve(cur.task, cur.key) }
	raw := func(int) error {
		_, err := s.rawResolve(ctx, cur.rawID, cur.rawKey)
		return err
	}
	for i := 0; i < warmups; i++ {
		if err := errors.Join(prepare(i), mount(i), raw(i)); err != nil {
			return err
		}
	}
	if err := prepare(0); err != nil {
		return err
	}
	mc, _, _ := s.callsOf(runOf(cur.task), func() error { return mount(0) })
	rc, _, _ := s.callsOf(cur.rawID, func() error { return raw(0) })
	tasks = nil
	ms, rs, err := interleave(n, prepare, mount, raw, nil)
	if err != nil {
		return err
	}
	// The ack came after the run applied the resolution: the next
	// tasks/get no longer lists the interrupt.
	for _, p := range tasks {
		res, err := m.get(p.task)
		if err != nil {
			return err
		}
		if _, open := res.InputRequests[p.key]; open {
			return fmt.Errorf("task %s still lists %s after tasks/update", p.task, p.key)
		}
	}
	t.latency("tasks/update until applied", "Signal + Query", ms, rs, targetUpdate, mc+" | "+rc)
	return nil
}

// rowCancelKnown cancels runs the cancelling service started itself.
func rowCancelKnown(ctx context.Context, s *stack, t *table, n int) error {
	return rowCancel(ctx, s, t, n, s.mcp(), "tasks/cancel", targetCancel)
}

// rowCancelUnknown cancels over a mount whose run service never saw the
// run (another replica): it must describe the run first, to check its
// owner, which the raw program that started the run needs not do. The row
// is shown without a target: the issue's target is the tasks/cancel row.
func rowCancelUnknown(ctx context.Context, s *stack, t *table, n int) error {
	return rowCancel(ctx, s, t, n, s.mounts[1], "tasks/cancel, run started by another process", 0)
}

// rowCancel measures tasks/cancel over canceller against the raw SDK's
// Signal + RequestCancel (target 0: no target).
func rowCancel(ctx context.Context, s *stack, t *table, n int, canceller *mcpClient, name string, target float64) error {
	m := s.mcp()
	var task, rid string
	var tasks []string
	prepare := func(int) error {
		var err error
		if task, _, err = s.waiting(ctx, m); err != nil {
			return err
		}
		tasks = append(tasks, task)
		rid, _, err = s.rawWaiting(ctx)
		return err
	}
	mount := func(int) error { return canceller.cancel(task) }
	raw := func(int) error { return s.rawCancel(ctx, rid) }
	closed := func(id func() string) func(int) error {
		return func(int) error { return s.waitClosed(ctx, id()) }
	}
	for i := 0; i < warmups; i++ {
		if err := errors.Join(prepare(i), mount(i), raw(i)); err != nil {
			return err
		}
	}
	if err := prepare(0); err != nil {
		return err
	}
	mc, _, _ := s.callsOf(runOf(task), func() error { return mount(0) })
	rc, _, _ := s.callsOf(rid, func() error { return raw(0) })
	tasks = nil
	ms, rs, err := interleaveSides(n, prepare,
		side{mount, closed(func() string { return runOf(task) })}, side{raw, closed(func() string { return rid })}, nil)
	if err != nil {
		return err
	}
	// Every cancelled task ends cancelled.
	for _, tk := range tasks {
		for {
			res, err := m.get(tk)
			if err != nil {
				return err
			}
			if res.Status == "cancelled" {
				break
			}
			if res.Status != "working" && res.Status != "input_required" {
				return fmt.Errorf("cancelled task %s: %v", tk, res.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.latency(name, "Signal(reason) + RequestCancel", ms, rs, target, mc+" | "+rc)
	return nil
}

func rowHistoryLength(ctx context.Context, s *stack, t *table, n int) error {
	m := s.mcp()
	short, _, err := s.waiting(ctx, m)
	if err != nil {
		return err
	}
	long, _, err := s.waiting(ctx, m)
	if err != nil {
		return err
	}
	longID := runOf(long)
	for i := 0; i < historySignals; i++ {
		// Resolutions of an interrupt that does not exist: the run
		// ignores them, and each adds a signal and a workflow task.
		if err := s.c.SignalWorkflow(ctx, longID, "", signals.SignalResolveInterrupt,
			signals.Resolution{InterruptID: "none", Action: signals.ActionAccept, ResolvedBy: s.caller}); err != nil {
			return err
		}
	}
	if _, err := s.rawQuery(ctx, longID); err != nil {
		return err
	}
	lengths := make([]int64, 2)
	for i, task := range []string{short, long} {
		d, err := s.c.DescribeWorkflowExecution(ctx, runOf(task), "")
		if err != nil {
			return err
		}
		lengths[i] = d.GetWorkflowExecutionInfo().GetHistoryLength()
	}
	get := func(task string) func(int) error {
		return func(int) error {
			res, err := m.get(task)
			if err == nil && res.Status != "input_required" {
				err = fmt.Errorf("tasks/get = %v", res.Status)
			}
			return err
		}
	}
	if err := errors.Join(warm(get(long)), warm(get(short))); err != nil {
		return err
	}
	lm, sm, err := interleave(n, nil, get(long), get(short), nil)
	if err != nil {
		return err
	}
	r := ratio(lm.median(), sm.median())
	t.add(fmt.Sprintf("tasks/get at %d events", lengths[1]), fmt.Sprintf("tasks/get at %d events", lengths[0]),
		msf(lm.median()), msf(sm.median()), fmt.Sprintf("%.2f×", r), msf(lm.p90()), msf(sm.p90()),
		fmt.Sprintf("%.2f×", ratio(lm.p90(), sm.p90())), fmt.Sprintf("≤ %.2f× (flat)", targetFlatGet), verdict(r <= targetFlatGet), "")
	return nil
}

func rowLifecycleCalls(ctx context.Context, s *stack, t *table, _ int) error {
	mid, err := s.mountLifecycle(ctx, s.mcp())
	if err != nil {
		return err
	}
	rid, err := s.rawLifecycle(ctx)
	if err != nil {
		return err
	}
	mc, rc := s.callsAbout(mid), s.callsAbout(rid)
	t.add("Temporal calls per lifecycle", "raw lifecycle", fmt.Sprint(len(mc)), fmt.Sprint(len(rc)), "", "", "", "",
		fmt.Sprintf("≤ %d", targetCalls), verdict(len(mc) <= targetCalls), count(mc)+" | "+count(rc))
	return nil
}

// rowThroughput runs full lifecycles from c concurrent clients for eight
// blocks of d, raw and mount alternating (ABBA BAAB, so that a drift in the
// machine's load hits both sides alike), and compares the rates.
func rowThroughput(ctx context.Context, s *stack, t *table, c int, d time.Duration) error {
	var done [2]int
	var took [2]time.Duration
	rawFailed := 0 // blocks in which a raw lifecycle failed
	var mu sync.Mutex
	ids := [2][]string{}
	rec, rawRec := &recorder{}, &recorder{}
	s.mcp().gets.Store(rec)
	defer s.mcp().gets.Store(nil)
	s.rawQueries.Store(rawRec)
	defer s.rawQueries.Store(nil)
	for _, side := range []int{0, 1, 1, 0, 1, 0, 0, 1} {
		life := func(ctx context.Context) error {
			var id string
			var err error
			if side == 0 {
				id, err = s.rawLifecycle(ctx)
			} else {
				id, err = s.mountLifecycle(ctx, s.mcp())
			}
			mu.Lock()
			ids[side] = append(ids[side], id)
			mu.Unlock()
			return err
		}
		k, elapsed, err := lifecycles(ctx, c, d, 0, life)
		if err != nil && side == 0 && c > maxTargetRate {
			// Past the levels with a target, the raw side's own calls
			// may time out (nothing bounds what it asks of Temporal): its
			// failed lifecycles are counted, not fatal.
			rawFailed++
			err = nil
		}
		if err != nil {
			return err
		}
		done[side] += k
		took[side] += elapsed
	}
	perLife := func(ids []string) float64 {
		calls := 0
		for _, id := range ids {
			calls += len(s.callsAbout(id))
		}
		return float64(calls) / float64(max(1, len(ids)))
	}
	raw, mount := float64(done[0])/took[0].Seconds(), float64(done[1])/took[1].Seconds()
	r := mount / raw
	target, pass := fmt.Sprintf("≥ %.2f×", targetRate), verdict(r >= targetRate)
	if c > maxTargetRate {
		target, pass = "(no target)", ""
	}
	if rawFailed > 0 {
		target = fmt.Sprintf("(no target; raw lifecycles failed in %d of 4 blocks)", rawFailed)
	}
	gets, queries := rec.samples(), rawRec.samples()
	t.add(fmt.Sprintf("throughput, C=%d (lifecycles/s)", c), "raw lifecycles/s",
		fmt.Sprintf("%.1f", mount), fmt.Sprintf("%.1f", raw), fmt.Sprintf("%.2f×", r), "", "", "", target, pass,
		fmt.Sprintf("%.2f | %.2f calls per lifecycle; tasks/get p50 %s ms (%.2f× the raw query's), p99 %s ms (%.2f×)",
			perLife(ids[1]), perLife(ids[0]), msf(gets.median()), ratio(gets.median(), queries.median()),
			msf(gets.quantile(0.99)), ratio(gets.quantile(0.99), queries.quantile(0.99))))
	return nil
}

// lifecycles starts lifecycles from c goroutines until d passed, lets the
// ones in flight finish, and returns how many ran and how long it took:
// counting the tail avoids rounding a rate down to whole lifecycles per
// goroutine when a lifecycle takes a good part of d. Goroutine g starts
// its first lifecycle g/c of stagger after the others' start (0: all at
// once).
func lifecycles(ctx context.Context, c int, d, stagger time.Duration, life func(context.Context) error) (int, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(d)
	var done atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for g := 0; g < c; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(stagger * time.Duration(g) / time.Duration(c))
			for time.Now().Before(deadline) {
				if err := life(ctx); err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(done.Load()), time.Since(start), first
}

// jsonLine prints v as one JSON line with a prefix.
func jsonLine(prefix string, v any) string {
	raw, _ := json.Marshal(v)
	return prefix + " " + string(raw)
}

// waitClosed waits until the run has closed (untimed settling).
func (s *stack) waitClosed(ctx context.Context, id string) error {
	for {
		d, err := s.c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return err
		}
		if d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}
