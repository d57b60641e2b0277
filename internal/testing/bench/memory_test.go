package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// childEnv marks the child process of the memory row.
const childEnv = "OPENWOP_BENCH_CHILD"

// memoryPrefix starts the line on which the memory row's process reports.
const memoryPrefix = "BENCH-MEMORY"

// memoryResult is what the child reports.
type memoryResult struct {
	Open int `json:"open"`
	// RSS before and after opening the tasks, as the process has it
	// (KiB), and after a forced GC that returns free memory to the OS.
	RSSBeforeKiB, RSSAfterKiB, RSSAfterGCKiB int64
	HeapBeforeKiB, HeapAfterKiB              uint64
	StackBeforeKiB, StackAfterKiB            uint64
	GoroutinesBefore, GoroutinesAfter        int
	OpenSeconds                              float64
	// Latencies (ns) of tasks/get on runs evicted from the worker's cache
	// (each sample a different old run) and on cached ones, and of the raw
	// query on each.
	Evicted, Cached, RawEvicted, RawCached samples
}

// rowMemory runs the memory row in a child process and adds its rows.
func rowMemory(t *table, open, n int) error {
	var res memoryResult
	env := []string{childEnv + "=1", "OPENWOP_BENCH_OPEN=" + strconv.Itoa(open), "OPENWOP_BENCH_N=" + strconv.Itoa(n)}
	if err := runChild("TestOpenTasksChild", env, memoryPrefix, &res); err != nil {
		return fmt.Errorf("memory process: %w", err)
	}
	per := float64(res.RSSAfterKiB-res.RSSBeforeKiB) / float64(res.Open)
	perGC := float64(res.RSSAfterGCKiB-res.RSSBeforeKiB) / float64(res.Open)
	t.add(fmt.Sprintf("RSS growth per open task (%d waiting)", res.Open), "",
		fmt.Sprintf("%.1f KiB", per), "", "", "", "", "", fmt.Sprintf("≤ %d KiB", targetRSSKiB), verdict(per <= targetRSSKiB),
		fmt.Sprintf("RSS %d→%d MiB (%.1f KiB/task after a forced GC); Go heap %d→%d MiB, stacks %d→%d MiB, goroutines %d→%d; opened in %.0f s",
			res.RSSBeforeKiB>>10, res.RSSAfterKiB>>10, perGC, res.HeapBeforeKiB>>10, res.HeapAfterKiB>>10,
			res.StackBeforeKiB>>10, res.StackAfterKiB>>10, res.GoroutinesBefore, res.GoroutinesAfter, res.OpenSeconds))
	r := ratio(res.Evicted.median(), res.Cached.median())
	t.add("tasks/get, run evicted from the worker cache", "tasks/get, cached run",
		msf(res.Evicted.median()), msf(res.Cached.median()), fmt.Sprintf("%.2f×", r),
		msf(res.Evicted.p90()), msf(res.Cached.p90()), fmt.Sprintf("%.2f×", ratio(res.Evicted.p90(), res.Cached.p90())),
		fmt.Sprintf("≤ %.1f×", targetEvicted), verdict(r <= targetEvicted),
		fmt.Sprintf("raw QueryWorkflow: evicted %s ms, cached %s ms", msf(res.RawEvicted.median()), msf(res.RawCached.median())))
	return nil
}

// TestOpenTasksChild is the memory row's child process (skipped unless
// BenchmarkIssue11 runs it): a fresh embedded-default stack opens the
// tasks, waiting for approval, and reports the RSS growth and the cost of
// tasks/get on evicted and cached runs.
func TestOpenTasksChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("the memory row of BenchmarkIssue11 runs this in a child process")
	}
	open := envInt("OPENWOP_BENCH_OPEN", defaultOpenRuns)
	n := envInt("OPENWOP_BENCH_N", defaultN)
	s := newStack(t, t.TempDir(), false)
	ctx := context.Background()
	m := s.mcp()

	// Warm up: pools, connections, caches of the code paths.
	if _, err := openTasks(m, 200, 8); err != nil {
		t.Fatal(err)
	}
	settle()
	var res memoryResult
	res.Open = open
	res.RSSBeforeKiB = rssKiB()
	res.HeapBeforeKiB, res.StackBeforeKiB, res.GoroutinesBefore = goStats()

	start := time.Now()
	tasks, err := openTasks(m, open, 8)
	if err != nil {
		t.Fatal(err)
	}
	res.OpenSeconds = time.Since(start).Seconds()
	// Every task waits for approval (its first workflow task done).
	for _, task := range []string{tasks[0], tasks[len(tasks)/2], tasks[len(tasks)-1]} {
		if _, err := waitInput(ctx, m, task); err != nil {
			t.Fatal(err)
		}
	}
	settle()
	res.RSSAfterKiB = rssKiB()
	res.HeapAfterKiB, res.StackAfterKiB, res.GoroutinesAfter = goStats()
	runtime.GC()
	debug.FreeOSMemory()
	res.RSSAfterGCKiB = rssKiB()

	// The oldest runs fell out of the worker's cache (and of the server's
	// history cache); the newest are cached. Each evicted sample reads a
	// different old run, so none of them is warm.
	n = min(n, len(tasks)/4)
	get := func(task string, out *samples) error {
		start := time.Now()
		res, err := m.get(task)
		*out = append(*out, time.Since(start))
		if err == nil && res.Status != "input_required" {
			err = fmt.Errorf("tasks/get %s = %v", task, res.Status)
		}
		return err
	}
	query := func(task string, out *samples) error {
		start := time.Now()
		_, err := s.rawQuery(ctx, runOf(task))
		*out = append(*out, time.Since(start))
		return err
	}
	for i := 0; i < n; i++ {
		oldM, oldR := tasks[2*i], tasks[2*i+1]
		newM, newR := tasks[len(tasks)-1-2*i], tasks[len(tasks)-2-2*i]
		if err := errors.Join(get(oldM, &res.Evicted), get(newM, &res.Cached), query(oldR, &res.RawEvicted), query(newR, &res.RawCached)); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println(jsonLine(memoryPrefix, res))
}

// openTasks starts k approval tasks over the mount from c clients and
// returns their taskIds, oldest first (roughly: c run at once).
func openTasks(m *mcpClient, k, c int) ([]string, error) {
	tasks := make([]string, k)
	var next int
	var mu sync.Mutex
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
				mu.Unlock()
				if i >= k {
					return
				}
				task, err := m.callTool(approvalTool, map[string]any{})
				if err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					return
				}
				tasks[i] = task
			}
		}()
	}
	wg.Wait()
	return tasks, first
}

// settle lets the worker finish the workflow tasks in flight and the
// runtime its background work.
func settle() { time.Sleep(5 * time.Second) }

// rssKiB is the process's resident set size.
func rssKiB() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kib, _ := strconv.ParseInt(f[0], 10, 64)
				return kib
			}
		}
	}
	return 0
}

func goStats() (heapKiB, stackKiB uint64, goroutines int) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse >> 10, ms.StackInuse >> 10, runtime.NumGoroutine()
}
