// Package mcpcalltest is a fake MCP server for tests of workflows that
// call tools with package mcpcall: it speaks the 2026-07-28 wire with the
// Tasks extension over streamable HTTP, and each of its tools follows a
// script (results, questions, progress, failures), one step per poll, so
// that a test with the SDK's test environment (or workflowstest), where
// timers fire at once, runs a long call in no time.
//
// It checks what a strict server checks (the protocol version, the
// Mcp-Method and Mcp-Name headers, the Tasks extension on tasks/*) and
// records every request, so that a test asserts what the server saw:
// how many tasks a call started (Server.Started), its idempotency keys,
// the answers (Server.Updates) and cancellations (Server.Cancelled).
package mcpcalltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// Step is one step of a tool's script.
type Step struct {
	status  string
	message string
	key     string
	request json.RawMessage
	result  json.RawMessage
	code    int
}

// Working is a step during which the task is working with message (its
// progress), for one poll.
func Working(message string) Step { return Step{status: "working", message: message} }

// Ask is a step during which the task asks a form question (status
// input_required) until tasks/update answers key.
func Ask(key, message string, schema json.RawMessage) Step {
	req, _ := json.Marshal(map[string]any{"method": "elicitation/create",
		"params": map[string]any{"mode": "form", "message": message, "requestedSchema": schema}})
	return Step{status: "input_required", key: key, request: req}
}

// Text is a final step: the tool completes with one text block.
func Text(text string) Step {
	return Result(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
}

// Result is a final step: the tool completes with result, a
// CallToolResult (content, structuredContent, isError).
func Result(result any) Step {
	raw, err := json.Marshal(result)
	if err != nil {
		panic(fmt.Sprintf("mcpcalltest: encode result: %v", err))
	}
	return Step{status: "completed", result: raw}
}

// Fail is a final step: the task fails with a JSON-RPC error.
func Fail(code int, message string) Step { return Step{status: "failed", message: message, code: code} }

// Request is a request the server received.
type Request struct {
	// Method is the JSON-RPC method.
	Method string
	// Name is the tool name (tools/call) or the task id (tasks/*).
	Name string
	// IdempotencyKey is the call's _meta["io.openwop/idempotencyKey"].
	IdempotencyKey string
	// Params are the request's params.
	Params json.RawMessage
}

// Server is a fake MCP server. Its zero value is not usable: call
// NewServer.
type Server struct {
	// URL is the MCP endpoint.
	URL string
	// PollIntervalMs is the pollIntervalMs of its tasks (default 1000).
	PollIntervalMs int64

	mu       sync.Mutex
	tools    map[string][]Step
	tasks    map[string]*task
	byKey    map[string]json.RawMessage
	requests []Request
	drop     map[string]int
	fail     map[string]int
}

// task is a task the server runs.
type task struct {
	id        string
	tool      string
	steps     []Step
	at        int
	cancelled bool
	updates   []map[string]json.RawMessage
}

// NewServer starts a fake server; it stops when the test ends.
func NewServer(t testing.TB) *Server {
	s := &Server{PollIntervalMs: 1000, tools: map[string][]Step{}, tasks: map[string]*task{},
		byKey: map[string]json.RawMessage{}, drop: map[string]int{}, fail: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Tool adds a tool that follows steps. A script of one final step (Text,
// Result, Fail) answers tools/call at once; any other runs as a task:
// tools/call answers the first step, and each tasks/get moves past a
// Working step to the next; an Ask step waits for its answer.
func (s *Server) Tool(name string, steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools[name] = steps
}

// DropResponses makes the server do the next n requests of method but
// answer them 503, as if the answer were lost on the way back.
func (s *Server) DropResponses(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop[method] += n
}

// FailRequests makes the server refuse the next n requests of method
// with 503 without doing them.
func (s *Server) FailRequests(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[method] += n
}

// Requests returns the requests the server received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Started returns how many tasks or synchronous calls of tool the server
// started: a retried call with the same idempotency key starts none.
func (s *Server) Started(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for key := range s.byKey {
		if len(key) > len(tool) && key[:len(tool)+1] == tool+"\x00" {
			n++
		}
	}
	return n
}

// Tasks returns the ids of the tasks of tool, in no particular order.
func (s *Server) Tasks(tool string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, t := range s.tasks {
		if t.tool == tool {
			ids = append(ids, id)
		}
	}
	return ids
}

// Updates returns the inputResponses of every tasks/update of task id.
func (s *Server) Updates(id string) []map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tasks[id]; ok {
		return slices.Clone(t.updates)
	}
	return nil
}

// Cancelled reports whether task id was cancelled with tasks/cancel.
func (s *Server) Cancelled(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	return ok && t.cancelled
}

// view is the task as tasks/get shows it.
func (s *Server) view(t *task) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339)
	v := map[string]any{"taskId": t.id, "createdAt": now, "lastUpdatedAt": now, "ttlMs": nil,
		"pollIntervalMs": s.PollIntervalMs}
	if t.cancelled {
		v["status"] = "cancelled"
		return v
	}
	st := t.steps[t.at]
	v["status"] = st.status
	if st.message != "" {
		v["statusMessage"] = st.message
	}
	switch st.status {
	case "input_required":
		v["inputRequests"] = map[string]json.RawMessage{st.key: st.request}
	case "completed":
		v["result"] = st.result
	case "failed":
		v["error"] = map[string]any{"code": st.code, "message": st.message}
	}
	return v
}
