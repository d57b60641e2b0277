package mcpmount

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// These tests prove the request-ownership rule (RFC 0198 §G.12-§G.14) on
// the wire: real TCP connections written by hand against the whole product
// on the embedded Temporal server.

// TestWireBlockingDisconnectCancelsRun: a task-less tools/call whose client
// closes the socket while the call waits owns its run, so the run is
// cancelled with reason mcp-request-cancelled and its running activity sees
// the cancellation. JSON and SSE responses alike.
func TestWireBlockingDisconnectCancelsRun(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	for _, tt := range []struct{ name, accept string }{{"json", acceptJSON}, {"sse", acceptSSE}} {
		t.Run(tt.name, func(t *testing.T) {
			conn := dialCall(t, s.addr(), toolCall(1, "slow_compute", map[string]any{"seconds": 60, "label": tt.name}, map[string]any{}, tt.accept))
			defer conn.Close()
			id := p.next(t)
			s.awaitActivityStarted(t, id)
			if snap, err := s.runs.Get(context.Background(), auth.Anonymous(), id); err != nil || snap.Status.Terminal() {
				t.Fatalf("run before the disconnect = %+v, %v", snap, err)
			}
			closed := time.Now()
			conn.Close()
			snap := s.awaitEnd(t, auth.Anonymous(), id, 20*time.Second)
			wantCancelledByRequest(t, snap)
			if took := time.Since(closed); took > 10*time.Second {
				t.Fatalf("the run took %v to end after the disconnect", took)
			} else {
				t.Logf("run %s cancelled %v after the disconnect", id, took.Round(time.Millisecond))
			}
			if got := s.acts.Cancelled(id); len(got) == 0 {
				t.Fatalf("the run's activity did not see the cancellation (Cancelled(%s) is empty)", id)
			}
		})
	}
}

// TestWireDeliveredTaskSurvivesClose: once the whole CreateTaskResult was
// read, closing the connection does not touch the run: it completes, and
// tasks/get on a new connection reads completed.
func TestWireDeliveredTaskSurvivesClose(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	for _, tt := range []struct{ name, accept string }{{"json", acceptJSON}, {"sse", acceptSSE}} {
		t.Run(tt.name, func(t *testing.T) {
			conn := dialCall(t, s.addr(), toolCall(1, "slow_compute", map[string]any{"seconds": 2, "label": tt.name}, tasksCaps(), tt.accept))
			r := readRPC(t, conn)
			conn.Close()
			res := wantResult(t, r)
			taskID, _ := res["taskId"].(string)
			if res["resultType"] != "task" || taskID == "" {
				t.Fatalf("response = %s", r.Raw)
			}
			id := runOf(t, taskID)
			if started := p.next(t); started != id {
				t.Fatalf("started %s, task names %s", started, id)
			}
			snap := s.awaitEnd(t, auth.Anonymous(), id, 30*time.Second)
			if snap.Status != signals.StatusCompleted || snap.CancelReason != "" {
				t.Fatalf("delivered task's run = %s (reason %q), want completed", snap.Status, snap.CancelReason)
			}
			got := wantResult(t, s.client(t, "", tasksCaps()).call("tasks/get", map[string]any{"taskId": taskID}, nil))
			if got["status"] != "completed" {
				t.Fatalf("tasks/get = %v", got)
			}
		})
	}
}

// TestWireCloseBetweenStartAndAnswer: the client leaves after the workflow
// started but before the response is written (the afterStart hook holds the
// request until the server has noticed). The request still owned the run,
// so it is cancelled rather than orphaned, whether the answer would have
// been a CreateTaskResult or a blocking wait.
func TestWireCloseBetweenStartAndAnswer(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	p.holdStart = true
	for _, tt := range []struct {
		name string
		caps map[string]any
	}{{"tasked", tasksCaps()}, {"blocking", map[string]any{}}} {
		t.Run(tt.name, func(t *testing.T) {
			conn := dialCall(t, s.addr(), toolCall(1, "slow_compute", map[string]any{"seconds": 30}, tt.caps, acceptJSON))
			id := p.nextHeld(t)
			<-p.started
			conn.Close() // the hook returns once the server has seen this
			wantCancelledByRequest(t, s.awaitEnd(t, auth.Anonymous(), id, 20*time.Second))
		})
	}
}

// TestWireSSEOperatorCancel: an SSE blocking call sends its headers at once,
// keep-alive comment lines while it waits, and exactly one message. An
// operator cancel of the run (as REST or Temporal does it) ends the stream
// with CallToolResult isError:true; the server never sends
// notifications/cancelled.
func TestWireSSEOperatorCancel(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, func(o *Options) { o.KeepAlive = 200 * time.Millisecond }))
	conn := dialCall(t, s.addr(), toolCall(7, "slow_compute", map[string]any{"seconds": 60}, map[string]any{}, acceptSSE))
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read headers: %v", err)
	}
	defer resp.Body.Close()
	id := p.next(t)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("headers: HTTP %d, Content-Type %q", resp.StatusCode, ct)
	}
	// The headers came while the run is still going.
	if snap, err := s.runs.Get(context.Background(), auth.Anonymous(), id); err != nil || snap.Status.Terminal() {
		t.Fatalf("run when the headers arrived = %+v, %v", snap, err)
	}
	body := bufio.NewReader(resp.Body)
	var stream strings.Builder
	keepAlives := 0
	for keepAlives < 2 {
		line, err := body.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before two keep-alives: %v (read %q)", err, stream.String())
		}
		stream.WriteString(line)
		if strings.HasPrefix(line, ":") {
			keepAlives++
		}
	}
	if _, err := s.runs.Cancel(context.Background(), auth.Anonymous(), id, signals.ReasonCallerRequested); err != nil {
		t.Fatalf("operator cancel: %v", err)
	}
	rest, err := io.ReadAll(body)
	if err != nil {
		t.Fatalf("read the rest of the stream: %v", err)
	}
	stream.Write(rest)
	all := stream.String()
	if strings.Contains(all, "notifications/cancelled") {
		t.Fatalf("the server sent notifications/cancelled:\n%s", all)
	}
	var messages []string
	for _, ev := range strings.Split(all, "\n\n") {
		if strings.Contains(ev, "event: message") {
			messages = append(messages, ev)
		}
	}
	if len(messages) != 1 {
		t.Fatalf("want exactly one event: message, got %d:\n%s", len(messages), all)
	}
	var data string
	for _, line := range strings.Split(messages[0], "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = d
		}
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result map[string]any  `json:"result"`
		Error  any             `json:"error"`
	}
	if err := json.Unmarshal([]byte(data), &msg); err != nil {
		t.Fatalf("message %q: %v", data, err)
	}
	if string(msg.ID) != "7" || msg.Error != nil || msg.Result["isError"] != true || msg.Result["resultType"] != "complete" {
		t.Fatalf("final message = %s", data)
	}
	snap := s.awaitEnd(t, auth.Anonymous(), id, 20*time.Second)
	if snap.Status != signals.StatusCancelled || snap.CancelReason != signals.ReasonCallerRequested {
		t.Fatalf("run = %s (reason %q)", snap.Status, snap.CancelReason)
	}
	t.Logf("%d keep-alive lines before the cancel; stream:\n%s", keepAlives, all)
}

// TestWireBlockingWaitBound: at MaxBlockingWait a task-less call (of a
// client with the companion tools off) is answered isError with the run's
// ids, and the run is
// handed over, not cancelled: it goes on and completes, and tasks/get with
// the given taskId follows it.
func TestWireBlockingWaitBound(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, func(o *Options) {
		o.MaxBlockingWait = time.Second
		o.NoCompanionTools = true // a client that declared nothing gets a handoff otherwise
	}))
	conn := dialCall(t, s.addr(), toolCall(1, "slow_compute", map[string]any{"seconds": 4, "label": "bound"}, map[string]any{}, acceptJSON))
	begin := time.Now()
	r := readRPC(t, conn)
	waited := time.Since(begin)
	conn.Close()
	res := wantResult(t, r)
	id := p.next(t)
	// slow_compute declares an output schema, which the run's ids would
	// not match: they are in the text alone.
	if res["isError"] != true || res["resultType"] != "complete" || res["structuredContent"] != nil ||
		!strings.Contains(text(t, res), id) || !strings.Contains(text(t, res), runid.Project(id)) {
		t.Fatalf("answer at the bound = %s (run %s)", r.Raw, id)
	}
	if !strings.Contains(text(t, res), "tasks/get") {
		t.Fatalf("the answer does not say how to follow the run: %s", r.Raw)
	}
	snap, err := s.runs.Get(context.Background(), auth.Anonymous(), id)
	if err != nil || snap.Status.Terminal() || snap.CancelReason != "" {
		t.Fatalf("run after the bound = %+v, %v", snap, err)
	}
	c := s.client(t, "", tasksCaps())
	if got := wantResult(t, c.call("tasks/get", map[string]any{"taskId": runid.Project(id)}, nil)); got["status"] != "working" {
		t.Fatalf("tasks/get after the bound = %v", got)
	}
	snap = s.awaitEnd(t, auth.Anonymous(), id, 30*time.Second)
	if snap.Status != signals.StatusCompleted || snap.CancelReason != "" {
		t.Fatalf("run = %s (reason %q), want completed", snap.Status, snap.CancelReason)
	}
	waitTask(t, c, runid.Project(id), status("completed"))
	t.Logf("answered after %v", waited.Round(time.Millisecond))
}
