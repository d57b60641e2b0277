package mcpcalltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// rpcError is a JSON-RPC error with the HTTP status it is sent with.
type rpcError struct {
	status  int
	code    int
	message string
}

// params are the params of the requests the server serves.
type params struct {
	Name           string                     `json:"name"`
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	Meta           struct {
		Version string `json:"io.modelcontextprotocol/protocolVersion"`
		Caps    struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"io.modelcontextprotocol/clientCapabilities"`
		Key string `json:"io.openwop/idempotencyKey"`
	} `json:"_meta"`
}

// serve answers one POST.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	var p params
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil || json.Unmarshal(msg.Params, &p) != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": -32700, "message": "parse error"}})
		return
	}
	result, rerr := s.answer(r, msg.Method, msg.Params, p)
	if rerr != nil {
		if rerr.code == 0 {
			http.Error(w, rerr.message, rerr.status)
			return
		}
		writeJSON(w, rerr.status, map[string]any{"jsonrpc": "2.0", "id": msg.ID,
			"error": map[string]any{"code": rerr.code, "message": rerr.message}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
}

// answer checks the request as a strict server does, records it and
// answers it, failing or dropping it when told to.
func (s *Server) answer(r *http.Request, method string, raw json.RawMessage, p params) (any, *rpcError) {
	name := p.Name
	if method != "tools/call" {
		name = p.TaskID
	}
	switch {
	case p.Meta.Version != "2026-07-28":
		return nil, &rpcError{http.StatusBadRequest, -32022, fmt.Sprintf("unsupported protocol version %q", p.Meta.Version)}
	case r.Header.Get("MCP-Protocol-Version") != p.Meta.Version || r.Header.Get("Mcp-Method") != method:
		return nil, &rpcError{http.StatusBadRequest, -32020, "MCP-Protocol-Version or Mcp-Method does not match the body"}
	case method != "tools/list" && method != "server/discover" && r.Header.Get("Mcp-Name") != name:
		return nil, &rpcError{http.StatusBadRequest, -32020, "Mcp-Name does not match the body"}
	case strings.HasPrefix(method, "tasks/") && p.Meta.Caps.Extensions["io.modelcontextprotocol/tasks"] == nil:
		return nil, &rpcError{http.StatusBadRequest, -32021, "the request does not declare the Tasks extension"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Method: method, Name: name, IdempotencyKey: p.Meta.Key, Params: raw})
	if s.fail[method] > 0 {
		s.fail[method]--
		return nil, &rpcError{status: http.StatusServiceUnavailable, message: "failing on purpose"}
	}
	res, rerr := s.do(method, p)
	if s.drop[method] > 0 {
		s.drop[method]--
		return nil, &rpcError{status: http.StatusServiceUnavailable, message: "answer dropped on purpose"}
	}
	return res, rerr
}

// do serves method (s.mu held).
func (s *Server) do(method string, p params) (any, *rpcError) {
	switch method {
	case "server/discover":
		return map[string]any{"resultType": "complete", "supportedVersions": []string{"2026-07-28"},
			"capabilities": map[string]any{"tools": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
			"serverInfo":   map[string]any{"name": "mcpcalltest", "version": "1"}, "ttlMs": 0, "cacheScope": "public"}, nil
	case "tools/list":
		names := make([]string, 0, len(s.tools))
		for n := range s.tools {
			names = append(names, n)
		}
		slices.Sort(names)
		tools := make([]any, len(names))
		for i, n := range names {
			tools[i] = map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}}
		}
		return map[string]any{"resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "private"}, nil
	case "tools/call":
		return s.call(p)
	}
	t, ok := s.tasks[p.TaskID]
	if !ok {
		return nil, &rpcError{http.StatusOK, -32602, "task not found"}
	}
	final := t.cancelled || t.steps[t.at].status == "completed" || t.steps[t.at].status == "failed"
	switch method {
	case "tasks/get":
		if !final && t.steps[t.at].status == "working" && t.at+1 < len(t.steps) {
			t.at++
		}
		return withType(s.view(t), "complete"), nil
	case "tasks/update":
		t.updates = append(t.updates, p.InputResponses)
		if st := t.steps[t.at]; !final && st.status == "input_required" && p.InputResponses[st.key] != nil && t.at+1 < len(t.steps) {
			t.at++
		}
		return map[string]any{"resultType": "complete"}, nil
	case "tasks/cancel":
		t.cancelled = t.cancelled || !final
		return map[string]any{"resultType": "complete"}, nil
	}
	return nil, &rpcError{http.StatusNotFound, -32601, "method not found: " + method}
}

// call serves tools/call: once per idempotency key.
func (s *Server) call(p params) (any, *rpcError) {
	steps, ok := s.tools[p.Name]
	if !ok {
		return nil, &rpcError{http.StatusOK, -32602, "unknown tool " + p.Name}
	}
	key := p.Meta.Key
	if key == "" {
		key = fmt.Sprintf("unkeyed-%d", len(s.requests))
	}
	key = p.Name + "\x00" + key
	if prev, ok := s.byKey[key]; ok {
		var v any
		_ = json.Unmarshal(prev, &v)
		return v, nil
	}
	var res any
	switch {
	case len(steps) == 1 && steps[0].status == "completed":
		var v map[string]any
		_ = json.Unmarshal(steps[0].result, &v)
		res = withType(v, "complete")
	case len(steps) == 1 && steps[0].status == "failed":
		return nil, &rpcError{http.StatusOK, steps[0].code, steps[0].message}
	default:
		t := &task{id: fmt.Sprintf("task-%d", len(s.tasks)+1), tool: p.Name, steps: steps}
		s.tasks[t.id] = t
		res = withType(s.view(t), "task")
	}
	enc, _ := json.Marshal(res)
	s.byKey[key] = enc
	return res, nil
}

// withType sets v's resultType.
func withType(v map[string]any, resultType string) map[string]any {
	v["resultType"] = resultType
	return v
}

// writeJSON writes v as the JSON body of a response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
