package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
)

// BenchmarkStdioColdStart is how long a host that spawns `server -stdio`
// against an external Temporal (TEMPORAL_ADDRESS) waits: from the spawn to
// the answer of initialize, and to the result of a first tools/call
// (delay, 0 ms). Two builds are measured:
//
//   - the stock binary with no option set, serving the example tools with
//     its in-process worker;
//   - the one built with -tags mountonly (no embedded Temporal server
//     linked) with OPENWOP_WORKER=off, the tools served by a worker
//     process already running, as docs/configuration.md advises for hosts
//     that spawn the server.
//
// The baseline, measured in the same run, is the stock binary's spawn to
// the end of `server -h`: that process's own start (loading and package
// initialisation), which no server code can shorten.
//
//	go test -run '^$' -bench StdioColdStart -benchtime 10x ./cmd/server
func BenchmarkStdioColdStart(b *testing.B) {
	env := testenv.Temporal(b)
	bins := b.TempDir()
	stock, lean, worker := filepath.Join(bins, "server"), filepath.Join(bins, "server-mountonly"), filepath.Join(bins, "worker")
	for _, build := range [][]string{{"-o", stock, "."}, {"-tags", "mountonly", "-o", lean, "."}, {"-o", worker, "../worker"}} {
		if out, err := exec.Command("go", append([]string{"build"}, build...)...).CombinedOutput(); err != nil {
			b.Fatalf("go build %v: %v\n%s", build, err, out)
		}
	}
	dir := b.TempDir()
	environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TEMPORAL_ADDRESS=" + env.Address,
		"TEMPORAL_NAMESPACE=" + env.Namespace, "OPENWOP_LOG_LEVEL=error", "OPENWOP_TASK_QUEUE=" + testenv.UniqueTaskQueue(b)}

	var floor, initialize, first, leanInit, leanFirst []time.Duration
	for b.Loop() {
		began := time.Now()
		cmd := exec.Command(stock, "-h")
		cmd.Env = environ
		_ = cmd.Run() // -h exits 0 or 2 by flag convention; either is the floor
		floor = append(floor, time.Since(began))

		init, res := stdioStart(b, stock, dir, environ)
		initialize, first = append(initialize, init), append(first, res)
	}
	// The worker process starts only now, so that it served none of the
	// stock binary's calls.
	leanEnv := append(slices.Clip(environ), "OPENWOP_WORKER=off")
	startWorker(b, worker, b.TempDir(), leanEnv)
	for range floor {
		init, res := stdioStart(b, lean, dir, leanEnv)
		leanInit, leanFirst = append(leanInit, init), append(leanFirst, res)
	}
	floorMs := median(floor)
	b.ReportMetric(floorMs, "floor-ms")
	for _, m := range []struct {
		unit string
		ds   []time.Duration
	}{
		{"initialize", initialize}, {"first-result", first},
		{"mountonly-initialize", leanInit}, {"mountonly-first-result", leanFirst},
	} {
		b.ReportMetric(median(m.ds), m.unit+"-ms")
		b.ReportMetric(median(m.ds)/floorMs, m.unit+"/floor")
	}
}

// startWorker runs the worker binary until the benchmark ends and returns
// once it has published its tools.
func startWorker(b *testing.B, bin, dir string, environ []string) {
	b.Helper()
	cmd := exec.Command(bin)
	cmd.Dir, cmd.Env = dir, append(slices.Clip(environ), "OPENWOP_LOG_LEVEL=info", "OPENWOP_LOG_FORMAT=json")
	logs, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	lines := bufio.NewScanner(logs)
	for lines.Scan() {
		if strings.Contains(lines.Text(), "tools published") {
			go func() { _, _ = io.Copy(io.Discard, logs) }()
			return
		}
	}
	b.Fatalf("worker exited before publishing its tools: %v", lines.Err())
}

// stdioStart spawns bin -stdio and returns how long it took to answer
// initialize and a first tools/call; the process is then killed.
func stdioStart(b *testing.B, bin, dir string, environ []string) (time.Duration, time.Duration) {
	b.Helper()
	cmd := exec.Command(bin, "-stdio")
	cmd.Dir, cmd.Env = dir, environ
	var logs strings.Builder
	cmd.Stderr = &logs
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	began := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	send := func(line string) {
		if _, err := stdin.Write([]byte(line + "\n")); err != nil {
			b.Fatal(err)
		}
	}
	read := func(what string) string {
		line, err := out.ReadString('\n')
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			b.Fatalf("%s: %v\n%s", what, err, logs.String())
		}
		return line
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`)
	read("initialize")
	init := time.Since(began)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delay","arguments":{"delayMs":0}}}`)
	if line := read("tools/call"); !strings.Contains(line, `"sleptMs`) {
		b.Fatalf("tools/call = %s", line)
	}
	return init, time.Since(began)
}

// median is the median of ds in milliseconds.
func median(ds []time.Duration) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}
