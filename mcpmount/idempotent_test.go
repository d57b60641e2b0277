package mcpmount

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// keyedCall is a tools/call of tool with args carrying idempotency key.
func keyedCall(id any, tool string, args map[string]any, key string, caps map[string]any) wireCall {
	c := toolCall(id, tool, args, caps, acceptJSON)
	c.params["_meta"] = map[string]any{MetaIdempotencyKey: key}
	return c
}

// TestIdempotentCallWire: on raw sockets against real Temporal, a call
// carrying an idempotency key whose answer the client lost (read off the
// socket, never used) is retried: the retry answers the same task, and
// Temporal holds one workflow execution of it; the key with other
// arguments is -32602 naming the reuse; a key of a run whose request went
// away before its answer (cancelled, RFC 0198) starts a fresh run; a
// blocking retry of an ended run answers its result again.
func TestIdempotentCallWire(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, nil))
	ctx := context.Background()
	args := map[string]any{"seconds": 30, "label": "once"}

	conn := dialCall(t, s.addr(), keyedCall(1, "slow_compute", args, "order-1", tasksCaps()))
	first := wantResult(t, readRPC(t, conn))
	conn.Close() // the answer is lost: the client never uses it
	taskID, _ := first["taskId"].(string)
	if first["resultType"] != "task" || taskID == "" {
		t.Fatalf("first call = %v", first)
	}
	id := p.next(t)
	desc, err := s.env.Client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	execution := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()

	conn = dialCall(t, s.addr(), keyedCall(2, "slow_compute", map[string]any{"label": "once", "seconds": 30}, "order-1", tasksCaps()))
	retry := wantResult(t, readRPC(t, conn))
	conn.Close()
	if retry["taskId"] != taskID || p.next(t) != id {
		t.Fatalf("retry = %v, want task %s", retry, taskID)
	}
	desc, err = s.env.Client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil || desc.GetWorkflowExecutionInfo().GetExecution().GetRunId() != execution {
		t.Fatalf("the retry started the workflow again (%v)", err)
	}

	conn = dialCall(t, s.addr(), keyedCall(3, "slow_compute", map[string]any{"seconds": 1, "label": "once"}, "order-1", tasksCaps()))
	r := readRPC(t, conn)
	conn.Close()
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, `"order-1"`) || !strings.Contains(r.Error.Message, "other arguments") {
		t.Fatalf("the key with other arguments = %s", r.Raw)
	}

	// The request of order-2 goes away before its answer: its run is
	// cancelled, no promise; the retry starts a fresh one.
	conn = dialCall(t, s.addr(), keyedCall(4, "slow_compute", args, "order-2", map[string]any{"elicitation": map[string]any{}}))
	abandoned := p.next(t)
	s.awaitActivityStarted(t, abandoned)
	conn.Close()
	wantCancelledByRequest(t, s.awaitEnd(t, auth.Anonymous(), abandoned, 30*time.Second))
	conn = dialCall(t, s.addr(), keyedCall(5, "slow_compute", args, "order-2", tasksCaps()))
	fresh := wantResult(t, readRPC(t, conn))
	conn.Close()
	if fresh["taskId"] == nil || fresh["taskId"] == runid.Project(abandoned) || fresh["status"] != "working" {
		t.Fatalf("retry after the abandoned run = %v (abandoned %s)", fresh, abandoned)
	}

	// Blocking: the retry of an ended run answers its result again.
	caps := map[string]any{"elicitation": map[string]any{}}
	c := s.client(t, "", caps)
	keyed := func(key any) map[string]any {
		meta := modernMetaFor(caps)
		meta[MetaIdempotencyKey] = key
		return meta
	}
	quick := map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0, "label": "quick"}, "_meta": keyed("order-3")}
	a := text(t, wantResult(t, c.call("tools/call", quick, nil)))
	b := text(t, wantResult(t, c.call("tools/call", quick, nil)))
	if a != b || !strings.Contains(a, "quick") {
		t.Fatalf("blocking retry = %q, first = %q", b, a)
	}

	// A key that is no string of printable ASCII is refused.
	quick["_meta"] = keyed(42)
	if r := c.call("tools/call", quick, nil); r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, MetaIdempotencyKey) {
		t.Fatalf("numeric key = %s", r.Raw)
	}
}

// TestIdempotentCallSession: a session-dialect client (the go-sdk client)
// carries the key in its call's _meta; its retry answers the same run.
func TestIdempotentCallSession(t *testing.T) {
	s := newStack(t, nil, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "retrying", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(key string) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_compute", Arguments: map[string]any{"seconds": 0, "label": key},
			Meta: mcp.Meta{MetaIdempotencyKey: key}})
		if err != nil || res.IsError {
			t.Fatalf("call with key %s = %+v, %v", key, res, err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if a, b := call("s-1"), call("s-1"); a != b {
		t.Fatalf("retry = %q, first = %q", b, a)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_compute", Arguments: map[string]any{"seconds": 1, "label": "s-1"},
		Meta: mcp.Meta{MetaIdempotencyKey: "s-1"}})
	if err == nil || !strings.Contains(err.Error(), "other arguments") {
		t.Fatalf("the key with other arguments = %+v, %v", res, err)
	}
}
