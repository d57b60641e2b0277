package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// moduleRoot is the repository root (this package is internal/testing/e2e).
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// build compiles the main package in dir (relative to root) into out.
func build(t *testing.T, root, dir, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join(root, dir)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", dir, err, b)
	}
}

// process is a started command whose output is kept for failure reports.
type process struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

func start(t *testing.T, name, bin string, env ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin), out: &bytes.Buffer{}}
	p.cmd.Env = append(os.Environ(), env...)
	w := &lockedWriter{buf: p.out}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("%s output:\n%s", name, w.String())
		}
	})
	return p
}

// stop interrupts the process and waits for it to exit (kill after 20 s).
func (p *process) stop(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// rpc posts one 2026-07-28 JSON-RPC request to the MCP endpoint and returns
// its result (or fails with its error).
type client struct {
	url string
	id  int
}

const meta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *client) call(t *testing.T, method, name string, params map[string]any) rpcResponse {
	t.Helper()
	c.id++
	p := map[string]any{"_meta": json.RawMessage(meta)}
	for k, v := range params {
		p[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": p})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw = lastData(raw)
	}
	var out rpcResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: HTTP %d, undecodable answer %q: %v", method, resp.StatusCode, raw, err)
	}
	return out
}

// lastData returns the data of the last SSE event of a stream.
func lastData(stream []byte) []byte {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			last = []byte(strings.TrimSpace(d))
		}
	}
	return last
}

func (c *client) toolNames(t *testing.T) []string {
	t.Helper()
	r := c.call(t, "tools/list", "", nil)
	if r.Error != nil {
		t.Fatalf("tools/list: %d %s", r.Error.Code, r.Error.Message)
	}
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatalf("tools/list result: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// task is the part of a tasks/get result the test reads.
type task struct {
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	Result        *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	} `json:"result"`
}

func (c *client) waitTask(t *testing.T, id string, until func(task) bool) task {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := c.call(t, "tasks/get", id, map[string]any{"taskId": id})
		if r.Error != nil {
			t.Fatalf("tasks/get: %d %s", r.Error.Code, r.Error.Message)
		}
		var tk task
		if err := json.Unmarshal(r.Result, &tk); err != nil {
			t.Fatalf("tasks/get result %s: %v", r.Result, err)
		}
		if until(tk) {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s stuck in %s", id, tk.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestBringYourOwnWorker builds the stock server and the nested example
// module examples/refund (its own go.mod, only public packages), starts
// the server on its embedded Temporal, then the worker: the refund tool,
// which the server was not compiled with, is listed within seconds and a
// call runs to completion with a human approval over MCP. Once the worker
// stops, a call is refused before any run starts; once a second one is
// killed with kill -9, its tool leaves tools/list and calls are refused
// within 15 s, with no option set in the worker.
func TestBringYourOwnWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the commands")
	}
	root := moduleRoot(t)
	bin := t.TempDir()
	build(t, root, "cmd/server", filepath.Join(bin, "server"))
	build(t, root, "examples/refund", filepath.Join(bin, "refund"))

	base, temporalPort := startStockServer(t, filepath.Join(bin, "server"), filepath.Join(bin, "data"))
	c := &client{url: base + "/mcp"}
	if names := c.toolNames(t); contains(names, "refund") || !contains(names, "publish_report") {
		t.Fatalf("tools before the worker started: %v (want publish_report, not refund)", names)
	}

	worker := start(t, "refund worker", filepath.Join(bin, "refund"),
		fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", temporalPort), "TEMPORAL_NAMESPACE=default")
	began := time.Now()
	for !contains(c.toolNames(t), "refund") {
		if time.Since(began) > 20*time.Second {
			t.Fatal("the refund tool was not listed 20 s after its worker started")
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("refund listed %v after its worker started", time.Since(began).Round(time.Millisecond))

	r := c.call(t, "tools/call", "refund", map[string]any{
		"name": "refund", "arguments": map[string]any{"orderId": "A-17", "amountCents": 1250, "reason": "damaged"},
	})
	if r.Error != nil {
		t.Fatalf("tools/call refund: %d %s", r.Error.Code, r.Error.Message)
	}
	var created task
	if err := json.Unmarshal(r.Result, &created); err != nil || created.TaskID == "" {
		t.Fatalf("tools/call refund: no task in %s (%v)", r.Result, err)
	}
	id := created.TaskID
	waiting := c.waitTask(t, id, func(tk task) bool { return tk.Status == "input_required" })
	if len(waiting.InputRequests) != 1 {
		t.Fatalf("input requests: %v, want the approval", waiting.InputRequests)
	}
	for key := range waiting.InputRequests {
		u := c.call(t, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}},
		}})
		if u.Error != nil {
			t.Fatalf("tasks/update: %d %s", u.Error.Code, u.Error.Message)
		}
	}
	done := c.waitTask(t, id, func(tk task) bool { return tk.Status != "input_required" && tk.Status != "working" })
	if done.Status != "completed" || done.Result == nil || done.Result.IsError {
		t.Fatalf("final task: %+v", done)
	}
	var out struct {
		Refunded bool   `json:"refunded"`
		RefundID string `json:"refundId"`
	}
	if err := json.Unmarshal(done.Result.StructuredContent, &out); err != nil || !out.Refunded || out.RefundID != "rf-A-17" {
		t.Fatalf("structured result %s: %+v (%v)", done.Result.StructuredContent, out, err)
	}

	// The worker withdraws its publication when it stops: the tool leaves
	// the catalog and a call is refused before any run starts.
	worker.stop(t)
	began = time.Now()
	for contains(c.toolNames(t), "refund") {
		if time.Since(began) > 20*time.Second {
			t.Fatal("the refund tool was still listed 20 s after its worker stopped")
		}
		time.Sleep(250 * time.Millisecond)
	}
	r = c.call(t, "tools/call", "refund", map[string]any{
		"name": "refund", "arguments": map[string]any{"orderId": "A-18", "amountCents": 1},
	})
	if r.Error == nil || !strings.Contains(r.Error.Message, "refund") {
		t.Fatalf("tools/call with no worker: %s / %+v, want an error naming the tool", r.Result, r.Error)
	}

	// The README's worker, which sets no option, killed with kill -9:
	// its tool leaves tools/list, and calls are refused, within 15 s.
	killed := start(t, "refund worker (killed)", filepath.Join(bin, "refund"),
		fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", temporalPort), "TEMPORAL_NAMESPACE=default")
	began = time.Now()
	for !contains(c.toolNames(t), "refund") {
		if time.Since(began) > 20*time.Second {
			t.Fatal("the refund tool was not listed 20 s after its second worker started")
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = killed.cmd.Wait()
	began = time.Now()
	for contains(c.toolNames(t), "refund") {
		if time.Since(began) > 15*time.Second {
			t.Fatal("the refund tool was still listed 15 s after kill -9 of the README's worker")
		}
		time.Sleep(250 * time.Millisecond)
	}
	gone := time.Since(began)
	r = c.call(t, "tools/call", "refund", map[string]any{
		"name": "refund", "arguments": map[string]any{"orderId": "A-19", "amountCents": 1},
	})
	if r.Error == nil || !strings.Contains(r.Error.Message, "unavailable") || time.Since(began) > 15*time.Second {
		t.Fatalf("tools/call %v after kill -9 of the README's worker: %s / %+v, want it refused as unavailable", time.Since(began), r.Result, r.Error)
	}
	t.Logf("kill -9 of the README's worker: refund gone from tools/list %v after the kill, and refused", gone.Round(10*time.Millisecond))
}

func waitHealthy(t *testing.T, url string, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s not healthy within %v", url, limit)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
