package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// TestKeylessServerRefusesCrossSite: on the assembled server (a keyless
// local one: loopback listener, no API keys), every route refuses a
// foreign Origin and a foreign Host with 403, and every POST route a body
// that is not application/json with 415, while the same requests without
// them pass.
func TestKeylessServerRefusesCrossSite(t *testing.T) {
	s := startLimitsStack(t, nil)
	id, err := runid.New("anon:local", nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	s.runs.Add(signals.Snapshot{RunID: id, Tool: "delay", Status: signals.StatusWaitingApproval,
		Owner: signals.Owner{Tenant: "anon:local"}, CreatedAt: now, UpdatedAt: now, LastSequence: -1,
		Interrupts: []signals.Interrupt{{ID: "i-1", NodeID: "approve", Kind: signals.KindApproval, RequestedAt: now}}})
	s.runs.OnStart(func(_ runs.NewRun, snap *signals.Snapshot) { // blocking calls end at once
		snap.Status, snap.StatusMessage = signals.StatusCompleted, signals.StatusCompleted.Message()
		snap.Result = &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: "done"}}}
	})
	p := "/runs/" + runid.Project(id)
	routes := []struct{ method, path, body string }{
		{"GET", "/healthz", ""},
		{"POST", "/mcp", mcpBody},
		{"GET", "/.well-known/openwop", ""},
		{"GET", "/runs", ""},
		{"POST", "/runs", `{"workflowId":"delay","inputs":{"delayMs":1}}`},
		{"GET", p, ""},
		{"POST", p + "/cancel", `{}`},
		{"GET", p + "/events/poll", ""},
		{"POST", p + "/interrupts/approve", `{"resumeValue":{"action":"accept"}}`},
		{"GET", "/no/such/route", ""},
	}
	do := func(method, path, body, host string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+s.addr+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "delay")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && resp.StatusCode >= 400 {
			t.Errorf("%s %s: a %d answered %q, not JSON", method, path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return resp.StatusCode, string(b)
	}
	for _, rt := range routes {
		if code, b := do(rt.method, rt.path, rt.body, "", map[string]string{"Origin": "http://evil.example"}); code != 403 {
			t.Errorf("%s %s with a foreign Origin = %d %s, want 403", rt.method, rt.path, code, b)
		}
		if code, b := do(rt.method, rt.path, rt.body, "attacker.example:8080", nil); code != 403 {
			t.Errorf("%s %s with a foreign Host = %d %s, want 403", rt.method, rt.path, code, b)
		}
		if rt.method == "POST" {
			if code, b := do(rt.method, rt.path, rt.body, "", map[string]string{"Content-Type": "text/plain"}); code != 415 {
				t.Errorf("%s %s as text/plain = %d %s, want 415", rt.method, rt.path, code, b)
			}
		}
	}
	if n := s.runs.StartCount(); n != 0 || len(s.runs.CancelCalls()) != 0 || len(s.runs.ResolveCalls()) != 0 {
		t.Fatalf("refused requests reached the run service: %d starts, %d cancels, %d resolutions",
			n, len(s.runs.CancelCalls()), len(s.runs.ResolveCalls()))
	}
	for _, rt := range routes {
		if code, b := do(rt.method, rt.path, rt.body, "", map[string]string{"Origin": "http://localhost:5173"}); code == 403 || code == 415 {
			t.Errorf("%s %s from a loopback origin = %d %s, want it past the gate", rt.method, rt.path, code, b)
		}
	}
}
