package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
)

// BenchmarkStdioColdStart is how long a host that spawns `server -stdio`
// against an external Temporal (TEMPORAL_ADDRESS) waits: from the spawn to
// the answer of initialize, and to the result of a first tools/call
// (delay, 0 ms). The baseline, measured in the same run, is the same
// binary's spawn to the end of `server -h`: the process's own start
// (loading and package initialisation), which no server code can shorten.
//
//	go test -run '^$' -bench StdioColdStart -benchtime 10x ./cmd/server
func BenchmarkStdioColdStart(b *testing.B) {
	env := testenv.Temporal(b)
	bin := filepath.Join(b.TempDir(), "server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	dir := b.TempDir()
	environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TEMPORAL_ADDRESS=" + env.Address,
		"TEMPORAL_NAMESPACE=" + env.Namespace, "OPENWOP_LOG_LEVEL=error"}
	var floor, initialize, first []time.Duration
	for b.Loop() {
		began := time.Now()
		cmd := exec.Command(bin, "-h")
		cmd.Env = environ
		_ = cmd.Run() // -h exits 0 or 2 by flag convention; either is the floor
		floor = append(floor, time.Since(began))

		init, res := stdioStart(b, bin, dir, environ)
		initialize, first = append(initialize, init), append(first, res)
	}
	floorMs := median(floor)
	b.ReportMetric(floorMs, "floor-ms")
	b.ReportMetric(median(initialize), "initialize-ms")
	b.ReportMetric(median(first), "first-result-ms")
	b.ReportMetric(median(initialize)/floorMs, "initialize/floor")
	b.ReportMetric(median(first)/floorMs, "first-result/floor")
}

// stdioStart spawns bin -stdio and returns how long it took to answer
// initialize and a first tools/call; the process is then killed.
func stdioStart(b *testing.B, bin, dir string, environ []string) (time.Duration, time.Duration) {
	b.Helper()
	cmd := exec.Command(bin, "-stdio")
	cmd.Dir, cmd.Env = dir, environ
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
			b.Fatalf("%s: %v", what, err)
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
