package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/datadir"
	"github.com/openwop/temporal-mcp/mcpmount"
)

// httpProc is a cmd/server process serving HTTP.
type httpProc struct {
	cmd    *exec.Cmd
	addr   string // host:port of its HTTP listener
	stderr *syncBuffer
	exited chan error
	done   bool // stopped
}

// startHTTP starts bin in dir as the README runs it (no option: the
// embedded Temporal on ./data), on free ports, logging JSON, and returns
// once it logged that it is ready.
func startHTTP(t *testing.T, bin, dir string) *httpProc {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, config.EnvHTTPAddr + "=127.0.0.1:0",
		config.EnvTemporalPort + "=0", config.EnvUIPort + "=0", config.EnvLogFormat + "=json"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &httpProc{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			_, _ = p.stderr.Write(append(sc.Bytes(), '\n'))
			var line struct {
				Msg  string `json:"msg"`
				HTTP string `json:"http"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "openwop server ready" {
				ready <- strings.TrimPrefix(line.HTTP, "http://")
			}
		}
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() { p.stop(t) })
	select {
	case p.addr = <-ready:
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("server exited before it was ready: %v; stderr:\n%s", err, p.stderr)
	case <-time.After(3 * time.Minute):
		t.Fatalf("server not ready after 3 minutes; stderr:\n%s", p.stderr)
	}
	return p
}

// stop ends the process as an operator does (SIGTERM) and waits for it;
// it must exit cleanly. Stopping a stopped process does nothing.
func (p *httpProc) stop(t *testing.T) {
	t.Helper()
	if p.done {
		return
	}
	p.done = true
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("server exit: %v; stderr:\n%s", err, p.stderr)
		}
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("server did not stop within a minute of SIGTERM; stderr:\n%s", p.stderr)
	}
}

// keyedCall calls publish_report (which waits for an approval) with
// idempotency key key, as a client that declared Tasks, and returns the
// task id it answers.
func keyedCall(t *testing.T, p *httpProc, key string) string {
	t.Helper()
	return callTask(t, p, "publish_report", map[string]any{"title": "Q3", "topic": "sales", "sections": 2},
		map[string]any{mcpmount.MetaIdempotencyKey: key})
}

// callTask calls tool with args (and extra _meta) as a client that
// declared Tasks, until the worker's tools are listed, and returns the
// task id it answers.
func callTask(t *testing.T, p *httpProc, tool string, args, meta map[string]any) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := mcpCall(t, p.addr, "tools/call", tool, map[string]any{"name": tool, "arguments": args, "_meta": meta})
		var task outageTask
		if r.Error == nil && json.Unmarshal(r.Result, &task) == nil && task.TaskID != "" {
			return task.TaskID
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools/call %s: %+v %s; stderr:\n%s", tool, r.Error, r.Result, p.stderr)
		}
		time.Sleep(200 * time.Millisecond) // until the worker's tools are listed
	}
}

// TestStopWithActivityInFlight: SIGTERM while an activity of the
// in-process worker runs (delay's sleep) stops the README's server
// cleanly, exit status 0, within its shutdown bound: the worker's wait for
// activities in flight fits inside the server's graceful shutdown, and the
// activity is retried once a worker is back (its run is not lost).
func TestStopWithActivityInFlight(t *testing.T) {
	bin := buildServer(t)
	dir := t.TempDir()
	first := startHTTP(t, bin, dir)
	id := callTask(t, first, "delay", map[string]any{"delayMs": 600_000}, nil)
	deadline := time.Now().Add(time.Minute)
	for getTask(t, first.addr, id).Status != "working" {
		if time.Now().After(deadline) {
			t.Fatalf("delay never started; stderr:\n%s", first.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // the sleep activity is under way
	first.stop(t)               // fails the test on a non-zero exit

	second := startHTTP(t, bin, dir)
	if st := getTask(t, second.addr, id).Status; st != "working" {
		t.Fatalf("after the restart the run is %q, want working", st)
	}
}

// buildServer builds cmd/server into a temporary directory.
func buildServer(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	bin := filepath.Join(t.TempDir(), "server")
	if b, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return bin
}

// TestIdempotencyKeyOutlivesRestart: with the README's configuration (no
// OPENWOP_MRTR_KEY, the data directory ./data), a call with an
// idempotency key, a restart of the server on the same data directory and
// the same call again start one run: the second call answers the first
// one's task. The key the server generated is kept in the data directory,
// readable by its owner only.
func TestIdempotencyKeyOutlivesRestart(t *testing.T) {
	bin := buildServer(t)
	dir := t.TempDir()

	first := startHTTP(t, bin, dir)
	before := keyedCall(t, first, "restart-42")
	if again := keyedCall(t, first, "restart-42"); again != before {
		t.Fatalf("retry before the restart = task %s, want %s", again, before)
	}
	// Stopped while the run waits for its approval (no activity in
	// flight).
	deadline := time.Now().Add(time.Minute)
	for getTask(t, first.addr, before).Status != "input_required" {
		if time.Now().After(deadline) {
			t.Fatalf("the run never asked for approval; stderr:\n%s", first.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	first.stop(t)

	second := startHTTP(t, bin, dir)
	if after := keyedCall(t, second, "restart-42"); after != before {
		t.Fatalf("retry after the restart = task %s, want the first call's %s (one run)", after, before)
	}

	info, err := os.Stat(filepath.Join(dir, config.DefaultDataDir, datadir.KeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want mode 0600", info, err)
	}
}
