package mcpmount

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// rawRequest writes one 2026-07-28 tools/call on a raw TCP connection.
func rawRequest(t *testing.T, addr string, caps map[string]any, accept string) net.Conn {
	return rawCall(t, addr, caps, accept, false)
}

// rawCall writes a tools/call of slow; sessionless sends it session-dialect style
// (no MCP-Protocol-Version header, no _meta).
func rawCall(t *testing.T, addr string, caps map[string]any, accept string, sessionless bool) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "slow", "arguments": map[string]any{"seconds": 5},
		"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": ProtocolVersion,
			"io.modelcontextprotocol/clientCapabilities": caps}}})
	version := "MCP-Protocol-Version: " + ProtocolVersion + "\r\n"
	if sessionless {
		body = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":5}}}`)
		version = ""
	}
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: %s\r\n"+
		"%sMcp-Method: tools/call\r\nMcp-Name: slow\r\nContent-Length: %d\r\n\r\n%s",
		addr, accept, version, len(body), body)
	return conn
}

// TestDisconnectCancelsOwnedRun: a blocking call whose client leaves before
// the response is sent cancels the run it owned, with reason
// mcp-request-cancelled.
func TestDisconnectCancelsOwnedRun(t *testing.T) {
	tests := []struct {
		name, accept string
		sessionless  bool
	}{
		{"json", "application/json, text/event-stream", false},
		{"sse", "text/event-stream, application/json", false},
		{"session-dialect", "application/json, text/event-stream", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, nil)
			conn := rawCall(t, strings.TrimPrefix(s.URL, "http://"), map[string]any{}, tt.accept, tt.sessionless)
			deadline := time.Now().Add(5 * time.Second)
			for s.runs.StartCount() == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if s.runs.StartCount() == 0 {
				t.Fatal("no run started")
			}
			conn.Close()
			id := s.runs.LastID()
			for time.Now().Before(deadline) {
				if reason, ok := s.runs.CancelReason(id); ok {
					if reason != signals.ReasonMCPRequestCancelled {
						t.Fatalf("reason = %q", reason)
					}
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Fatal("the owned run was not cancelled")
		})
	}
}

// TestDeliveredTaskSurvivesDisconnect: once the CreateTaskResult was read,
// closing the connection does not touch the run.
func TestDeliveredTaskSurvivesDisconnect(t *testing.T) {
	s := newTestServer(t, nil)
	conn := rawRequest(t, strings.TrimPrefix(s.URL, "http://"), tasksCaps(), "application/json, text/event-stream")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Result struct {
			TaskID string `json:"taskId"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Result.TaskID == "" {
		t.Fatalf("response: %v %+v", err, env)
	}
	conn.Close()
	time.Sleep(200 * time.Millisecond)
	id, _ := runid.Parse(env.Result.TaskID)
	if reason, ok := s.runs.CancelReason(id); ok {
		t.Fatalf("delivered task was cancelled (%s)", reason)
	}
}

// TestSSEResponse: a client preferring text/event-stream gets the answer as
// one SSE message.
func TestSSEResponse(t *testing.T) {
	s := newTestServer(t, nil)
	c := s.client(t, map[string]any{})
	r := c.call("tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "sse"}},
		map[string]string{"Accept": "text/event-stream, application/json"})
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("content type %q", r.Header.Get("Content-Type"))
	}
	if res := wantResult(t, r); text(t, res) != "Hello, sse!" {
		t.Fatalf("result = %v", res)
	}
}
