package mcpmount

import (
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// TestInlineAnswer: a tools/call that may take a task waits up to the
// inline wait for its run (Options.InlineWait, here 2 s): a run that ends within it is answered with its
// result, as a blocking call is, in every dialect that creates tasks; one
// still working then is answered with its task; a tool whose inline wait
// is 0 (the conformance fixtures) is answered with its task at once.
func TestInlineAnswer(t *testing.T) {
	// An inline wait with room for a loaded machine: a 5 ms run ends well
	// within it, a 10 s run does not.
	s := newStackWith(t, nil, "", func(o *Options) func(*Mount) {
		o.InlineWait = 2 * time.Second
		return nil
	})
	modern := s.client(t, "", tasksCaps())
	sessionless := &sessionlessClient{t: t, url: s.URL + "/mcp", version: "2025-11-25"}
	tests := []struct {
		name  string
		call  func() map[string]any
		check func(t *testing.T, res map[string]any)
	}{
		{"2026-07-28: a 5 ms run is answered with its result", func() map[string]any {
			return wantResult(t, modern.call("tools/call", map[string]any{"name": "delay", "arguments": map[string]any{"delayMs": 5}}, nil))
		}, func(t *testing.T, res map[string]any) {
			if res["resultType"] != "complete" || res["isError"] != false || res["taskId"] != nil || res["content"] == nil {
				t.Fatalf("result = %v, want the tool result", res)
			}
		}},
		{"2026-07-28: a 10 s run is answered with its task", func() map[string]any {
			return wantResult(t, modern.call("tools/call", map[string]any{"name": "delay", "arguments": map[string]any{"delayMs": 10000}}, nil))
		}, func(t *testing.T, res map[string]any) {
			if res["resultType"] != "task" || res["status"] != "working" || res["taskId"] == nil {
				t.Fatalf("result = %v, want a working task", res)
			}
		}},
		{"2026-07-28: a tool whose inline wait is 0 is answered with its task", func() map[string]any {
			return wantResult(t, modern.call("tools/call", map[string]any{"name": "conformance-delay", "arguments": map[string]any{"delayMs": 5}}, nil))
		}, func(t *testing.T, res map[string]any) {
			if res["resultType"] != "task" || res["taskId"] == nil {
				t.Fatalf("result = %v, want a task", res)
			}
		}},
		{"2025-11-25: a 5 ms run is a task created completed", func() map[string]any {
			return sessionless.createTask("delay", map[string]any{"delayMs": 5})
		}, func(t *testing.T, task map[string]any) {
			if task["status"] != "completed" {
				t.Fatalf("task = %v, want it completed", task)
			}
		}},
		{"2025-11-25: a 10 s run is a task created working", func() map[string]any {
			return sessionless.createTask("delay", map[string]any{"delayMs": 10000})
		}, func(t *testing.T, task map[string]any) {
			if task["status"] != "working" {
				t.Fatalf("task = %v, want it working", task)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, tt.call()) })
	}
}

// TestInlineWaitOwnsRun: while a call that took a task waits inline, the
// request owns its run (RFC 0198): a client that leaves then cancels it,
// with reason mcp-request-cancelled.
func TestInlineWaitOwnsRun(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, func(o *Options) { o.InlineWait = time.Minute }))
	conn := dialCall(t, s.addr(), toolCall(1, "delay", map[string]any{"delayMs": 30000}, tasksCaps(), ""))
	runID := p.next(t)
	conn.Close()
	wantCancelledByRequest(t, s.awaitEnd(t, auth.Anonymous(), runID, 30*time.Second))
}

// TestInlineWaitOff: a negative Options.InlineWait answers every task at
// once, however short its run.
func TestInlineWaitOff(t *testing.T) {
	s := newStackWith(t, nil, "", func(o *Options) func(*Mount) {
		o.InlineWait = -1
		return nil
	})
	c := s.client(t, "", tasksCaps())
	res := wantResult(t, c.call("tools/call", map[string]any{"name": "delay", "arguments": map[string]any{"delayMs": 5}}, nil))
	if res["resultType"] != "task" || res["taskId"] == nil {
		t.Fatalf("result = %v, want a task", res)
	}
	if res["status"] == string(signals.StatusCompleted) {
		t.Fatalf("the task was answered after its run ended: %v", res)
	}
}

// TestPollIntervalFitsTool: a task's pollIntervalMs is derived from how
// long its tool's runs took (a tenth of it, core.Pacer), once this server
// saw one end; a tool never seen to end gets Options.PollInterval (the
// stack's 200 ms).
func TestPollIntervalFitsTool(t *testing.T) {
	s := newStack(t, nil, "")
	c := s.client(t, "", tasksCaps())
	call := func() map[string]any {
		res := wantResult(t, c.call("tools/call", map[string]any{"name": "delay", "arguments": map[string]any{"delayMs": 4000}}, nil))
		if res["resultType"] != "task" {
			t.Fatalf("tools/call = %v, want a task", res)
		}
		return res
	}
	first := call()
	if first["pollIntervalMs"] != float64(200) {
		t.Fatalf("first task's pollIntervalMs = %v, want the default 200", first["pollIntervalMs"])
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		got := wantResult(t, c.call("tasks/get", map[string]any{"taskId": first["taskId"]}, nil))
		if got["status"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first run did not complete: %v", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The run took at least its 4 s: a tenth of it, at least 400 ms.
	if ms := call()["pollIntervalMs"].(float64); ms < 400 || ms > 1000 {
		t.Fatalf("pollIntervalMs after a 4 s run = %v, want about 400", ms)
	}
}
