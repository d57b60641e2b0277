package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/datadir"
)

// stdioProc is a cmd/server -stdio process driven over its stdin/stdout.
type stdioProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *syncBuffer
	id     int
}

// syncBuffer is a bytes.Buffer safe for the process's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startStdio starts bin -stdio in dir with a clean environment (PATH, HOME).
func startStdio(t *testing.T, bin, dir string) *stdioProc {
	t.Helper()
	cmd := exec.Command(bin, "-stdio")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	p := &stdioProc{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.out = bufio.NewReaderSize(stdout, 1<<20)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("pid %d did not exit after stdin closed; stderr:\n%s", cmd.Process.Pid, p.stderr)
		}
	})
	return p
}

// rpc sends a request and returns the response with its id; stdout
// carrying anything but JSON-RPC messages is an error.
func (p *stdioProc) rpc(method string, params any) (map[string]any, error) {
	p.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.id, "method": method, "params": params})
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("%s: write: %w", method, err)
	}
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: read: %w", method, err)
		}
		var msg map[string]any
		if err := json.Unmarshal(line, &msg); err != nil {
			return nil, fmt.Errorf("%s: stdout carried %q", method, line)
		}
		if id, _ := msg["id"].(float64); int(id) == p.id && msg["method"] == nil {
			if msg["error"] != nil {
				return nil, fmt.Errorf("%s: %v", method, msg["error"])
			}
			res, _ := msg["result"].(map[string]any)
			return res, nil
		}
	}
}

// notify sends a notification.
func (p *stdioProc) notify(method string) error {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	_, err := p.stdin.Write(append(b, '\n'))
	return err
}

// session is what a stdio host does: initialize, tools/list, and a call of
// the quick delay tool, which must answer with its result.
func (p *stdioProc) session() error {
	res, err := p.rpc("initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "stdio-test", "version": "1"},
	})
	if err != nil {
		return err
	}
	if res["protocolVersion"] != "2025-06-18" {
		return fmt.Errorf("initialize = %v", res)
	}
	if err := p.notify("notifications/initialized"); err != nil {
		return err
	}
	if err := p.call(); err != nil {
		return err
	}
	res, err = p.rpc("tools/list", map[string]any{})
	if err != nil {
		return err
	}
	names := map[string]bool{}
	tools, _ := res["tools"].([]any)
	for _, tl := range tools {
		if m, ok := tl.(map[string]any); ok {
			names[fmt.Sprint(m["name"])] = true
		}
	}
	if !names["delay"] || !names["publish_report"] {
		return fmt.Errorf("tools/list = %v", names)
	}
	return nil
}

// call calls delay and checks its result.
func (p *stdioProc) call() error {
	res, err := p.rpc("tools/call", map[string]any{"name": "delay", "arguments": map[string]any{"delayMs": 10}})
	if err != nil {
		return err
	}
	if b, _ := json.Marshal(res); res["isError"] == true || !strings.Contains(string(b), "slept") {
		return fmt.Errorf("tools/call delay = %s", b)
	}
	return nil
}

// openFiles reports whether process pid has a file named name open (from
// /proc; ok false where there is none).
func openFiles(pid int, name string) (open, ok bool) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false, false
	}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && filepath.Base(target) == name {
			return true, true
		}
	}
	return false, true
}

// TestTwoStdioServers launches cmd/server -stdio twice at once with one
// configuration, as two MCP hosts with the README's stdio entry do (same
// working directory, no variables): both answer initialize, tools/list and
// a tool call; only one of them opens the SQLite file, the other uses its
// Temporal server; and when the holder exits the other one runs the server
// and keeps answering.
func TestTwoStdioServers(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	bin := filepath.Join(t.TempDir(), "server")
	if b, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	dir := t.TempDir()
	procs := []*stdioProc{startStdio(t, bin, dir), startStdio(t, bin, dir)}
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.session() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d (pid %d): %v; stderr:\n%s", i, procs[i].cmd.Process.Pid, err, procs[i].stderr)
		}
	}

	var info datadir.Holder
	b, err := os.ReadFile(filepath.Join(dir, config.DefaultDataDir, datadir.InfoFile))
	if err == nil {
		err = json.Unmarshal(b, &info)
	}
	if err != nil {
		t.Fatalf("%s: %v", datadir.InfoFile, err)
	}
	holder, sharer := procs[0], procs[1]
	if info.PID == sharer.cmd.Process.Pid {
		holder, sharer = sharer, holder
	}
	if info.PID != holder.cmd.Process.Pid {
		t.Fatalf("%s names pid %d, neither process (%d, %d)", datadir.InfoFile, info.PID, procs[0].cmd.Process.Pid, procs[1].cmd.Process.Pid)
	}
	if !strings.Contains(sharer.stderr.String(), "using its Temporal server") {
		t.Errorf("the second process did not log that it uses the holder's server:\n%s", sharer.stderr)
	}
	hOpen, ok := openFiles(holder.cmd.Process.Pid, config.DBFileName)
	sOpen, _ := openFiles(sharer.cmd.Process.Pid, config.DBFileName)
	if ok && (!hOpen || sOpen) {
		t.Fatalf("%s open: holder %v, other %v; want only the holder", config.DBFileName, hOpen, sOpen)
	}

	// The holder's host goes away; the other keeps working on its own.
	_ = holder.stdin.Close()
	if err := holder.cmd.Wait(); err != nil {
		t.Fatalf("holder exit: %v; stderr:\n%s", err, holder.stderr)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if open, _ := openFiles(sharer.cmd.Process.Pid, config.DBFileName); open || !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the remaining process did not take over; stderr:\n%s", sharer.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Until the worker polls the new server again (seconds), the catalog
	// sees no live worker and the tool is not served: docs/operations.md's
	// "calls made during that switch may fail and can be retried".
	for {
		err := sharer.call()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the holder exited: %v; stderr:\n%s", err, sharer.stderr)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
