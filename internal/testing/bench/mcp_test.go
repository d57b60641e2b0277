package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// mcpClient sends MCP 2026-07-28 requests declaring the Tasks extension,
// as a real client does: the _meta triple in params and the
// MCP-Protocol-Version, Mcp-Method and Mcp-Name headers.
type mcpClient struct {
	url  string
	http *http.Client
	id   atomic.Int64
	// gets, when set, records the latency of every tasks/get.
	gets atomic.Pointer[recorder]
	// meta is the _meta of every request (nil: tasksMeta).
	meta json.RawMessage
}

// blockingMeta is the _meta of a client that does not declare the Tasks
// extension: its tools/call blocks until the result.
var blockingMeta = mustJSON(map[string]any{
	"io.modelcontextprotocol/protocolVersion":    mcpmount.ProtocolVersion,
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench", "version": "0"},
	"io.modelcontextprotocol/clientCapabilities": map[string]any{},
})

// tasksMeta is the _meta of every request, encoded once as a client that
// declares the same capabilities on every request would.
var tasksMeta = mustJSON(map[string]any{
	"io.modelcontextprotocol/protocolVersion":    mcpmount.ProtocolVersion,
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench", "version": "0"},
	"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{mcpmount.ExtensionTasks: map[string]any{}}},
})

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// taskResult is what the benchmark reads of a result, decoded into a
// struct as a typed client does (the raw side decodes its snapshot so).
type taskResult struct {
	ResultType    string                     `json:"resultType"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	IsError       bool                       `json:"isError"`
	// PollIntervalMs is a task's suggested poll interval.
	PollIntervalMs int64 `json:"pollIntervalMs"`
}

// call sends one request and returns its result.
func (c *mcpClient) call(method string, params map[string]any) (taskResult, error) {
	raw, status, err := c.raw(method, params)
	if err != nil {
		return taskResult{}, err
	}
	var out struct {
		Result *taskResult `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return taskResult{}, fmt.Errorf("%s: HTTP %d %q: %w", method, status, raw, err)
	}
	if out.Error != nil || out.Result == nil {
		return taskResult{}, fmt.Errorf("%s: HTTP %d %s", method, status, raw)
	}
	return *out.Result, nil
}

// raw sends one request and returns the JSON-RPC response (the last event
// of a stream) and the HTTP status.
func (c *mcpClient) raw(method string, params map[string]any) ([]byte, int, error) {
	meta := c.meta
	if meta == nil {
		meta = tasksMeta
	}
	p := map[string]any{"_meta": meta}
	for k, v := range params {
		p[k] = v
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Add(1), "method": method, "params": p})
	if err != nil {
		return nil, 0, err
	}
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcpmount.ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	switch method {
	case "tools/call":
		req.Header.Set("Mcp-Name", params["name"].(string))
	case "tasks/get", "tasks/update", "tasks/cancel":
		req.Header.Set("Mcp-Name", params["taskId"].(string))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp.StatusCode, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				raw = []byte(d)
			}
		}
	}
	return raw, resp.StatusCode, nil
}

// callTool calls tool as a task and returns the taskId.
func (c *mcpClient) callTool(tool string, args map[string]any) (string, error) {
	res, err := c.call("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return "", err
	}
	id := res.TaskID
	if res.ResultType != "task" || id == "" {
		return "", fmt.Errorf("tools/call %s = %v, want a CreateTaskResult", tool, res)
	}
	return id, nil
}

func (c *mcpClient) get(taskID string) (taskResult, error) {
	start := time.Now()
	res, err := c.call("tasks/get", map[string]any{"taskId": taskID})
	if r := c.gets.Load(); r != nil && err == nil {
		r.add(time.Since(start))
	}
	return res, err
}

// inputKey is the first inputRequests key of a tasks/get result.
func inputKey(res taskResult) string {
	for k := range res.InputRequests {
		return k
	}
	return ""
}

// approve answers the approval key of task with accept.
func (c *mcpClient) approve(taskID, key string) error {
	_, err := c.call("tasks/update", map[string]any{"taskId": taskID, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}}}})
	return err
}

func (c *mcpClient) cancel(taskID string) error {
	_, err := c.call("tasks/cancel", map[string]any{"taskId": taskID})
	return err
}

// runOf is the run id (workflow ID) of a taskId.
func runOf(taskID string) string {
	id, err := runid.Parse(taskID)
	if err != nil {
		return taskID
	}
	return id
}
