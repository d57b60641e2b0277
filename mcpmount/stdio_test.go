package mcpmount

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// stdioPeer is a client of Mount.ServeStdio over in-process pipes.
type stdioPeer struct {
	in     *io.PipeWriter // the server's stdin
	msgs   chan map[string]any
	served chan error // ServeStdio's result
}

// serveStdio runs m.ServeStdio for caller on pipes and returns the client
// end. Every line the server writes is decoded into msgs (a line that is
// not a JSON object fails the test).
func serveStdio(t *testing.T, m *Mount, caller signals.Subject) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{in: inW, msgs: make(chan map[string]any, 64), served: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		err := m.ServeStdio(ctx, caller, inR, outW)
		outW.Close()
		p.served <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var msg map[string]any
			if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
				t.Errorf("stdout carried a non-JSON line %q", sc.Text())
				continue
			}
			p.msgs <- msg
		}
		close(p.msgs)
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		select {
		case <-p.served:
		case <-time.After(30 * time.Second):
			t.Error("ServeStdio did not return")
		}
	})
	return p
}

// send writes one newline-delimited JSON-RPC message.
func (p *stdioPeer) send(t *testing.T, msg []byte) {
	t.Helper()
	if _, err := p.in.Write(append(msg, '\n')); err != nil {
		t.Fatalf("write to stdin: %v", err)
	}
}

// response returns the next response (a message with an id and no method).
func (p *stdioPeer) response(t *testing.T) map[string]any {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case msg, ok := <-p.msgs:
			if !ok {
				t.Fatal("stdout ended")
			}
			if _, isCall := msg["method"]; !isCall && msg["id"] != nil {
				return msg
			}
		case <-timeout:
			t.Fatal("no response on stdout")
		}
	}
}

// TestStdioOwnership proves the ownership rule on stdio: a
// notifications/cancelled naming an in-flight blocking call cancels the run
// it owns (and the cancelled call gets no response); a task whose CreateTaskResult was written is untouched by the
// end of stdin; stdin EOF with a blocking call in flight makes ServeStdio
// return after cancelling the run that call owns.
func TestStdioOwnership(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	call := func(id any, args map[string]any, caps map[string]any) []byte {
		return rpcBody(id, "tools/call", map[string]any{"name": "slow_compute", "arguments": args}, caps)
	}

	t.Run("notifications/cancelled", func(t *testing.T) {
		peer := serveStdio(t, s.mount, auth.Anonymous())
		peer.send(t, call(11, map[string]any{"seconds": 30}, map[string]any{}))
		id := p.next(t)
		s.awaitActivityStarted(t, id)
		peer.send(t, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11,"reason":"user gave up"}}`))
		wantCancelledByRequest(t, s.awaitEnd(t, auth.Anonymous(), id, 20*time.Second))
		if got := s.acts.Cancelled(id); len(got) == 0 {
			t.Fatalf("the run's activity did not see the cancellation")
		}
		// The cancelled call's id does not name a new call: a cancel for
		// an id with nothing in flight does nothing to a later run.
		peer.send(t, call("other", map[string]any{"seconds": 1}, map[string]any{}))
		other := p.next(t)
		peer.send(t, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11}}`))
		for {
			r := peer.response(t)
			if r["id"] == float64(11) {
				t.Fatalf("the server answered the call the client cancelled: %v", r)
			}
			if r["id"] == "other" {
				res, _ := r["result"].(map[string]any)
				if res["isError"] != false {
					t.Fatalf("other call = %v", r)
				}
				break
			}
		}
		if snap := s.awaitEnd(t, auth.Anonymous(), other, 20*time.Second); snap.Status != signals.StatusCompleted {
			t.Fatalf("other run = %s (reason %q)", snap.Status, snap.CancelReason)
		}
	})

	t.Run("delivered task survives EOF", func(t *testing.T) {
		peer := serveStdio(t, s.mount, auth.Anonymous())
		peer.send(t, call(1, map[string]any{"seconds": 2, "label": "stdio"}, tasksCaps()))
		r := peer.response(t)
		res, _ := r["result"].(map[string]any)
		if res["resultType"] != "task" {
			t.Fatalf("response = %v", r)
		}
		id := runOf(t, res["taskId"].(string))
		if started := p.next(t); started != id {
			t.Fatalf("started %s, task %s", started, id)
		}
		peer.in.Close()
		select {
		case err := <-peer.served:
			peer.served <- err
			if err != nil {
				t.Fatalf("ServeStdio = %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("ServeStdio did not return on stdin EOF")
		}
		snap := s.awaitEnd(t, auth.Anonymous(), id, 30*time.Second)
		if snap.Status != signals.StatusCompleted || snap.CancelReason != "" {
			t.Fatalf("delivered task's run = %s (reason %q)", snap.Status, snap.CancelReason)
		}
	})

	t.Run("EOF between start and answer", func(t *testing.T) {
		// The input ends while the task's run is being started: the call
		// records its run only after its claim was settled, and the run
		// is cancelled, not orphaned.
		p.mu.Lock()
		p.holdInStart = true
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.holdInStart = false
			p.mu.Unlock()
		}()
		peer := serveStdio(t, s.mount, auth.Anonymous())
		peer.send(t, call(1, map[string]any{"seconds": 30}, tasksCaps()))
		id := p.nextHeld(t)
		peer.in.Close()
		select {
		case err := <-peer.served:
			peer.served <- err
		case <-time.After(20 * time.Second):
			t.Fatal("ServeStdio did not return on stdin EOF")
		}
		if started := p.next(t); started != id {
			t.Fatalf("started %s, held %s", started, id)
		}
		wantCancelledByRequest(t, s.awaitEnd(t, auth.Anonymous(), id, 20*time.Second))
	})

	t.Run("EOF cancels the owned run", func(t *testing.T) {
		peer := serveStdio(t, s.mount, auth.Anonymous())
		peer.send(t, call(1, map[string]any{"seconds": 30}, map[string]any{}))
		id := p.next(t)
		peer.in.Close()
		select {
		case err := <-peer.served:
			peer.served <- err
			if err != nil {
				t.Fatalf("ServeStdio = %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("ServeStdio did not return on stdin EOF")
		}
		// ServeStdio returned after the cancellation was requested, so
		// the run is cancelling or cancelled already.
		snap, err := s.runs.Get(context.Background(), auth.Anonymous(), id)
		if err != nil || snap.CancelReason != signals.ReasonMCPRequestCancelled {
			t.Fatalf("run when ServeStdio returned = %s (reason %q), %v", snap.Status, snap.CancelReason, err)
		}
		wantCancelledByRequest(t, s.awaitEnd(t, auth.Anonymous(), id, 20*time.Second))
	})
}

// TestStdioModern: a 2026-07-28 client over stdio is served by the
// modern dialect's own front door, with no initialize: discovery, the
// tool list, a short call answered inline, a task followed and cancelled,
// and the version check, as over HTTP.
func TestStdioModern(t *testing.T) {
	// An inline wait far above a 5 ms run's time on a loaded machine (the
	// tests' default is the 200 ms poll interval), so "answered inline"
	// does not depend on the machine's speed.
	s := newStackWith(t, nil, "", func(o *Options) func(*Mount) {
		o.InlineWait = 5 * time.Second
		return nil
	})
	peer := serveStdio(t, s.mount, auth.Anonymous())
	id := 0
	call := func(version, method string, params map[string]any) map[string]any {
		t.Helper()
		id++
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "stdio-2026", "version": "0"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}},
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		peer.send(t, b)
		r := peer.response(t)
		if r["id"] != float64(id) {
			t.Fatalf("%s answered %v, want the answer of id %d", method, r, id)
		}
		return r
	}
	result := func(r map[string]any) map[string]any {
		t.Helper()
		res, ok := r["result"].(map[string]any)
		if !ok {
			t.Fatalf("want a result, got %v", r)
		}
		return res
	}
	if res := result(call(ProtocolVersion, "server/discover", map[string]any{})); res["supportedVersions"] == nil {
		t.Fatalf("server/discover = %v", res)
	}
	if names := strings.Join(toolNames(result(call(ProtocolVersion, "tools/list", map[string]any{}))), ","); !strings.Contains(names, "delay") ||
		strings.Contains(names, "openwop_run_status") || !strings.HasSuffix(names, ","+runListTool) {
		t.Fatalf("tools/list = %s, want the catalog's tools and, of the companion tools, the list tool alone (the client takes tasks)", names)
	}
	short := result(call(ProtocolVersion, "tools/call", map[string]any{"name": "delay", "arguments": map[string]any{"delayMs": 5}}))
	if short["resultType"] != "complete" || !strings.Contains(fmt.Sprint(short["structuredContent"]), "sleptMs") {
		t.Fatalf("a 5 ms call = %v, want its result inline", short)
	}
	task := result(call(ProtocolVersion, "tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 30}}))
	taskID, _ := task["taskId"].(string)
	if task["resultType"] != "task" || taskID == "" {
		t.Fatalf("a 30 s call = %v, want a task", task)
	}
	if got := result(call(ProtocolVersion, "tasks/get", map[string]any{"taskId": taskID})); got["status"] != "working" {
		t.Fatalf("tasks/get = %v, want working", got)
	}
	result(call(ProtocolVersion, "tasks/cancel", map[string]any{"taskId": taskID}))
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got := result(call(ProtocolVersion, "tasks/get", map[string]any{"taskId": taskID}))
		if got["status"] == "cancelled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks/get after tasks/cancel = %v, want cancelled", got)
		}
	}
	e, _ := call("2099-01-01", "tools/list", map[string]any{})["error"].(map[string]any)
	if e == nil || e["code"] != float64(mcp.CodeUnsupportedProtocolVersion) || !strings.Contains(fmt.Sprint(e["data"]), "2099-01-01") {
		t.Fatalf("an unknown version = %v, want %d naming it", e, mcp.CodeUnsupportedProtocolVersion)
	}
}
