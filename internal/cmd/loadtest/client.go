package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/openwop/temporal-mcp/signals/runid"
)

// stats are the figures of every request.
type stats struct {
	mu        sync.Mutex
	latencies []time.Duration
	status    map[int]int
	// byMethod counts the answers by method and HTTP status (0: no answer).
	byMethod  map[string]int
	transport int // requests that got no HTTP answer
	samples   map[string]string
	methodLat map[string][]time.Duration
	overload  int // 503 overloaded
}

func (s *stats) record(method string, d time.Duration, status int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status == nil {
		s.status, s.byMethod = map[int]int{}, map[string]int{}
	}
	s.byMethod[fmt.Sprintf("%s %d", method, status)]++
	if s.methodLat == nil {
		s.methodLat = map[string][]time.Duration{}
	}
	if err == nil && status < 500 {
		s.methodLat[method] = append(s.methodLat[method], d)
	}
	if err != nil {
		s.transport++
		return
	}
	s.status[status]++
	if status < 500 {
		s.latencies = append(s.latencies, d)
	}
}

// sample keeps the first answer of each method and non-200 status.
func (s *stats) sample(method string, status int, raw []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples == nil {
		s.samples = map[string]string{}
	}
	k := fmt.Sprintf("%s %d", method, status)
	if _, ok := s.samples[k]; !ok {
		s.samples[k] = string(raw)
	}
}

// mcpClient is one client: its lifecycles and the runs it holds.
type mcpClient struct {
	url      string
	st       *stats
	idx      int
	drainEnd time.Time
	id       int
	http     http.Client

	// runs maps each run id the client was handed to its intent (the
	// filename), finals its last status as the client saw it.
	runs   map[string]string
	finals map[string]string
	// intents counts the lifecycles started; unfinished those not
	// finished by the drain deadline.
	intents, unfinished int
}

type rpcAnswer struct {
	status int
	header http.Header
	raw    []byte
	result map[string]any
	err    *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
}

var capsTasks = map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}

// call sends one 2026-07-28 request.
func (c *mcpClient) call(ctx context.Context, method string, params map[string]any) (rpcAnswer, error) {
	c.id++
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "loadtest", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": capsTasks,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return rpcAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	for _, k := range []string{"name", "taskId"} {
		if v, ok := params[k].(string); ok {
			req.Header.Set("Mcp-Name", v)
		}
	}
	began := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		c.st.record(method, 0, 0, err)
		return rpcAnswer{}, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.st.record(method, time.Since(began), resp.StatusCode, err)
	if err != nil {
		return rpcAnswer{}, err
	}
	a := rpcAnswer{status: resp.StatusCode, header: resp.Header, raw: raw}
	var env struct {
		Result map[string]any `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusOK {
		c.st.sample(method, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return a, fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	a.result, a.err = env.Result, env.Error
	if resp.StatusCode == http.StatusServiceUnavailable {
		c.st.mu.Lock()
		c.st.overload++
		c.st.mu.Unlock()
	}
	return a, nil
}

// retry calls until the request gets a JSON-RPC answer that ok accepts,
// or the drain deadline passes, backing off on transport errors, 5xx and
// overload refusals.
func (c *mcpClient) retry(method string, params func() map[string]any, ok func(rpcAnswer) bool) (rpcAnswer, bool) {
	pause := 100 * time.Millisecond
	for time.Now().Before(c.drainEnd) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		a, err := c.call(ctx, method, params())
		cancel()
		if err == nil && ok(a) {
			return a, true
		}
		wait := pause
		if s := a.header.Get("Retry-After"); s != "" {
			if n, err := strconv.Atoi(s); err == nil {
				wait = time.Duration(n) * time.Second
			}
		}
		time.Sleep(wait + time.Duration(rand.Int64N(int64(pause))))
		pause = min(2*pause, 2*time.Second)
	}
	return rpcAnswer{}, false
}

// loop runs lifecycles until loadEnd, then finishes the one in progress.
func (c *mcpClient) loop(loadEnd time.Time) {
	c.runs, c.finals = map[string]string{}, map[string]string{}
	for iter := 0; time.Now().Before(loadEnd); iter++ {
		c.intents++
		if !c.lifecycle(fmt.Sprintf("c%d-%d.txt", c.idx, iter)) {
			c.unfinished++
		}
	}
}

// lifecycle runs one intent to its end; false when it did not finish.
func (c *mcpClient) lifecycle(intent string) bool {
	a, ok := c.retry("tools/call", func() map[string]any {
		return map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": intent}}
	}, func(a rpcAnswer) bool { return a.err == nil && a.result["taskId"] != nil })
	if !ok {
		return false
	}
	taskID, _ := a.result["taskId"].(string)
	runID := rawRunID(taskID)
	c.runs[runID] = intent
	get := func() map[string]any { return map[string]any{"taskId": taskID} }
	for {
		a, ok = c.retry("tasks/get", get, func(a rpcAnswer) bool {
			s, _ := a.result["status"].(string)
			return a.err == nil && (s == "input_required" || s == "completed" || s == "failed" || s == "cancelled")
		})
		if !ok {
			return false
		}
		status, _ := a.result["status"].(string)
		c.finals[runID] = status
		if status != "input_required" {
			return status == "completed"
		}
		reqs, _ := a.result["inputRequests"].(map[string]any)
		responses := map[string]any{}
		for k := range reqs {
			responses[k] = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
		}
		// An update that is answered "already resolved" after a retry
		// whose first attempt got through is fine: tasks/get tells.
		c.retry("tasks/update", func() map[string]any {
			return map[string]any{"taskId": taskID, "inputResponses": responses}
		}, func(a rpcAnswer) bool { return a.status < 500 && (a.err == nil || a.err.Code == -32602) })
	}
}

// rawRunID turns a projected task id into the run id.
func rawRunID(taskID string) string {
	id, err := runid.Parse(taskID)
	if err != nil {
		return taskID
	}
	return id
}
