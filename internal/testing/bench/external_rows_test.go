package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"golang.org/x/sys/unix"

	"github.com/openwop/temporal-mcp/signals/runid"
)

// blockOrder is the order of the sides' blocks in the CPU rows (0 raw,
// 1 mount): ABBA BAAB, so that a drift in the machine's load hits both
// sides alike.
var blockOrder = []int{0, 1, 1, 0, 1, 0, 0, 1}

// cpuBlocks runs k operations of each side per block, in blockOrder, and
// returns each side's latencies and CPU time: the mount server process's
// for the mount side, this process's for the raw side (both read from the
// kernel's process CPU clocks, in nanoseconds), each taken over that
// side's blocks only.
func cpuBlocks(k, mountPID int, raw, mount func(i int) error) (lat [2]samples, cpu [2]time.Duration, err error) {
	for bi, side := range blockOrder {
		op, usage := raw, selfCPU
		if side == 1 {
			op, usage = mount, func() time.Duration { return pidCPU(mountPID) }
		}
		before := usage()
		for i := 0; i < k; i++ {
			start := time.Now()
			if err := op(bi*k + i); err != nil {
				return lat, cpu, err
			}
			lat[side] = append(lat[side], time.Since(start))
		}
		cpu[side] += usage() - before
	}
	return lat, cpu, nil
}

// rowBlocking compares a blocking tools/call of the plain tool over the
// mount-only server with ExecuteWorkflow + Get from the raw SDK, on the
// same Temporal: latency, and CPU time per call of the server process
// against the raw program's.
func rowBlocking(ctx context.Context, s *stack, t *table, n, mountPID int) error {
	m := &mcpClient{url: s.mcp().url, http: s.mcp().http, meta: blockingMeta}
	mount := func(i int) error {
		res, err := m.call("tools/call", map[string]any{"name": plainTool, "arguments": map[string]any{"n": i}})
		if err == nil && (res.IsError || res.ResultType == "task") {
			err = fmt.Errorf("blocking tools/call = %+v", res)
		}
		return err
	}
	raw := func(i int) error {
		id, err := runid.New(s.caller.Tenant, nil)
		if err != nil {
			return err
		}
		run, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: plainQueue}, plainTool, map[string]any{"n": i})
		if err != nil {
			return fmt.Errorf("ExecuteWorkflow: %w", err)
		}
		var out map[string]any
		return run.Get(ctx, &out)
	}
	if err := errors.Join(warm(mount), warm(raw)); err != nil {
		return err
	}
	// 2n calls a side: the ratio of two CPU times of a few hundred
	// milliseconds each moves with the machine's load by a few percent.
	k := max(1, n/2)
	lat, cpu, err := cpuBlocks(k, mountPID, raw, mount)
	if err != nil {
		return err
	}
	t.latency("blocking tools/call, plain workflow (mount-only server, Temporal external)", "ExecuteWorkflow + Get",
		lat[1], lat[0], targetBlocking, "")
	perM, perR := cpu[1]/time.Duration(len(lat[1])), cpu[0]/time.Duration(len(lat[0]))
	r := ratio(perM, perR)
	t.add("  server CPU per blocking call (mount-only process)", "raw SDK program's CPU per call", msf(perM), msf(perR),
		fmt.Sprintf("%.2f×", r), "", "", "", fmt.Sprintf("≤ %.2f×", targetBlockingCPU), verdict(r <= targetBlockingCPU),
		fmt.Sprintf("CPU ms (process CPU clocks) over %d calls a side", len(lat[1])))
	return nil
}

// rowLifecycleCPU compares the CPU time per full lifecycle (tools/call,
// tasks/get until the approval is asked, tasks/update, tasks/get until
// completed) of the mount-only server process with the raw SDK program's
// (ExecuteWorkflow, queries, Signal + Query, Describe + close event).
func rowLifecycleCPU(ctx context.Context, s *stack, t *table, n, mountPID int) error {
	m := s.mcp()
	rec := &recorder{}
	var rawIDs []string
	mount := func(int) error {
		_, err := s.mountLifecycle(ctx, m)
		return err
	}
	raw := func(int) error {
		id, err := s.rawLifecycle(ctx)
		rawIDs = append(rawIDs, id)
		return err
	}
	if err := errors.Join(warm(mount), warm(raw)); err != nil {
		return err
	}
	rawIDs = nil
	m.gets.Store(rec)
	defer m.gets.Store(nil)
	k := max(1, n/10)
	lat, cpu, err := cpuBlocks(k, mountPID, raw, mount)
	if err != nil {
		return err
	}
	perM, perR := cpu[1]/time.Duration(len(lat[1])), cpu[0]/time.Duration(len(lat[0]))
	calls := 0
	for _, id := range rawIDs {
		calls += len(s.callsAbout(id))
	}
	t.add("server CPU per lifecycle (mount-only process, Temporal external)", "raw SDK program's CPU per lifecycle",
		msf(perM), msf(perR), fmt.Sprintf("%.2f×", ratio(perM, perR)), "", "", "", "(no target)", "",
		fmt.Sprintf("%d lifecycles a side; lifecycle median %s ms | %s ms; %.1f tasks/get | %.1f raw calls per lifecycle",
			len(lat[1]), msf(lat[1].median()), msf(lat[0].median()),
			float64(len(rec.samples()))/float64(len(lat[1])), float64(calls)/float64(max(1, len(rawIDs)))))
	return nil
}

// rowOpenTasks opens tasks waiting for approval, started in bulk with the
// SDK (as the mount starts them: same memo and search attributes), up to
// each level of OPENWOP_BENCH_EXT_OPEN (default 10000,100000), touches
// every one through the mount (a tasks/get each), and reads the mount
// process's RSS: flat, since the mount holds nothing per task beyond its
// bounded caches.
func rowOpenTasks(ctx context.Context, s *stack, t *table, mountPID int, idleKiB int64) error {
	levels := envInts("OPENWOP_BENCH_EXT_OPEN", []int{10000, 100000})
	var first int64
	var ids []string
	for li, level := range levels {
		start := time.Now()
		more, err := parallel(level-len(ids), 32, func(int) (string, error) { return s.rawStart(ctx) })
		if err != nil {
			return err
		}
		ids = append(ids, more...)
		opened := time.Since(start)
		start = time.Now()
		m := s.mcp()
		if _, err := parallel(len(ids), 8, func(i int) (string, error) {
			res, err := m.get(runid.Project(ids[i]))
			if err == nil && res.Status != "input_required" && res.Status != "working" {
				err = fmt.Errorf("tasks/get %s = %v", ids[i], res.Status)
			}
			return "", err
		}); err != nil {
			return err
		}
		touched := time.Since(start)
		time.Sleep(5 * time.Second)
		rss := pidRSSKiB(mountPID)
		if li == 0 {
			first = rss
		}
		r := float64(rss) / float64(max(first, 1))
		target, pass := "", ""
		if li == len(levels)-1 && li > 0 {
			target, pass = fmt.Sprintf("≤ %.2f× (flat)", targetOpenFlat), verdict(r <= targetOpenFlat)
		}
		t.add(fmt.Sprintf("mount RSS at %d open tasks (Temporal external)", level), fmt.Sprintf("at %d", levels[0]),
			fmt.Sprintf("%.1f MiB", float64(rss)/1024), fmt.Sprintf("%.1f MiB", float64(first)/1024), fmt.Sprintf("%.2f×", r),
			"", "", "", target, pass, fmt.Sprintf("idle before %.1f MiB; opened with the SDK in %.0f s, each read once through the mount in %.0f s",
				float64(idleKiB)/1024, opened.Seconds(), touched.Seconds()))
	}
	return nil
}

// parallel runs f for 0..k-1 from c goroutines and returns its results in
// order.
func parallel(k, c int, f func(i int) (string, error)) ([]string, error) {
	out := make([]string, max(k, 0))
	var mu sync.Mutex
	var next int
	var first error
	var wg sync.WaitGroup
	for g := 0; g < c; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= k || stop {
					return
				}
				v, err := f(i)
				mu.Lock()
				out[i], first = v, errors.Join(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out, first
}

// envInts reads a comma-separated list of integers (def when unset).
func envInts(name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// newMCPClient is a task-mode MCP client of url.
func newMCPClient(url string) *mcpClient {
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	return &mcpClient{url: url, http: &http.Client{Transport: transport, Timeout: time.Minute}}
}

// selfCPU is this process's CPU time, all its threads, in nanoseconds
// (CLOCK_PROCESS_CPUTIME_ID).
func selfCPU() time.Duration { return clockCPU(unix.CLOCK_PROCESS_CPUTIME_ID) }

// pidCPU is another process's CPU time, all its threads, in nanoseconds:
// its process CPU clock, as clock_getcpuclockid(3) names it. The same
// clock as selfCPU's, so the two sides of a row compare; /proc/<pid>/stat
// counts in 10 ms ticks, too coarse for a few hundred calls.
func pidCPU(pid int) time.Duration { return clockCPU(int32(^pid)<<3 | cpuClockSched) }

// cpuClockSched is the kernel's CPUCLOCK_SCHED: a process CPU clock that
// counts the scheduler's runtime in nanoseconds.
const cpuClockSched = 2

// clockCPU reads a CPU-time clock (0 when it cannot be read).
func clockCPU(clock int32) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// pidRSSKiB is a process's resident set size.
func pidRSSKiB(pid int) int64 { return pidStatusKiB(pid, "VmRSS:") }

// pidStatusKiB is a field of /proc/<pid>/status in KiB (VmRSS:, VmHWM:).
func pidStatusKiB(pid int, field string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			if f := strings.Fields(v); len(f) > 0 {
				kib, _ := strconv.ParseInt(f[0], 10, 64)
				return kib
			}
		}
	}
	return 0
}
