package upstream_test

// End to end: an MCP server of the test's own (the go-sdk, over streamable
// HTTP) behind the adapter. Its tools are published by a worker of the
// real embedded Temporal server, listed and called by an MCP client over
// HTTP through a mcpmount.Mount.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/worker"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/upstream"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/workflows"
)

// fake is the upstream: echo answers structured content; slow reports
// progress 1/3 and 2/3, then waits for its cancellation.
type fake struct {
	mu        sync.Mutex
	cancelled []string // methods of the notifications/cancelled it received
	calls     map[string]int
	tokens    []string      // the X-Token header of each request
	waiting   chan struct{} // closed when slow has reported its progress
	stopped   chan struct{} // closed when slow's context ended
}

type echoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

// server is the fake's MCP server.
func (f *fake) server() *mcp.Server {
	f.calls, f.waiting, f.stopped = map[string]int{}, make(chan struct{}), make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Title: "Echo", Description: "Echoes its text.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			f.count("echo")
			return nil, echoOut{Echo: in.Text}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Works until cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			f.count("slow")
			for i := 1; i <= 2; i++ {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 3}); err != nil {
					return nil, nil, err
				}
			}
			close(f.waiting)
			<-ctx.Done()
			close(f.stopped)
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fails as a tool."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such file"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "flaky", Description: "Hangs the first time, answers the next.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			f.count("flaky")
			f.mu.Lock()
			first := f.calls["flaky"] == 1
			f.mu.Unlock()
			if first {
				<-ctx.Done()
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			f.count("hang")
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/cancelled" {
				f.mu.Lock()
				f.cancelled = append(f.cancelled, method)
				f.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	return s
}

// serve serves the fake over streamable HTTP and returns its URL.
func (f *fake) serve(t *testing.T) string {
	t.Helper()
	s := f.server()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.tokens = append(f.tokens, r.Header.Get("X-Token"))
		f.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (f *fake) count(tool string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[tool]++
}

func (f *fake) cancels() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.cancelled)
}

func randomPrefix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "up" + hex.EncodeToString(b) + "_"
}

func TestUpstreamBehindTheAdapter(t *testing.T) {
	env := testenv.Temporal(t)
	f := &fake{}
	prefix := randomPrefix()
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"fake","url":%q,"headerEnv":{"X-Token":"FAKE_TOKEN"},"prefix":%q,
		"policy":{"hang":{"timeout":"2s","heartbeat":"1s"},"flaky":{"timeout":"2s","heartbeat":"1s"}}}]}`,
		f.serve(t), prefix), func(k string) (string, bool) { return "t0k3n", k == "FAKE_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	c := serveUpstreams(t, env, file)
	f.mu.Lock()
	if len(f.tokens) == 0 {
		t.Fatal("no request reached the upstream")
	}
	for _, tok := range f.tokens {
		if tok != "t0k3n" {
			t.Fatalf("a request reached the upstream with X-Token %q, want the value of FAKE_TOKEN", tok)
		}
	}
	f.mu.Unlock()
	echo, slow := prefix+"echo", prefix+"slow"
	tools := c.waitTools(echo, slow)
	t.Run("list", func(t *testing.T) {
		e := tools[echo]
		if e["description"] != "Echoes its text." || !strings.Contains(fmt.Sprint(e["inputSchema"]), "what to echo") {
			t.Fatalf("tools/list %s = %v, want the upstream's description and input schema", echo, e)
		}
		if a := e["annotations"]; !reflect.DeepEqual(a, map[string]any{"title": "Echo", "readOnlyHint": true}) {
			t.Fatalf("annotations of %s = %v, want the upstream's title and readOnlyHint", echo, a)
		}
		if !strings.Contains(fmt.Sprint(e["outputSchema"]), "echo") {
			t.Fatalf("outputSchema of %s = %v", echo, e["outputSchema"])
		}
	})
	t.Run("call", func(t *testing.T) {
		res := c.result("tools/call", map[string]any{"name": echo, "arguments": map[string]any{"text": "hi"}}, nil)
		if sc, _ := json.Marshal(res["structuredContent"]); string(sc) != `{"echo":"hi"}` || res["isError"] == true {
			t.Fatalf("tools/call %s = %v, want structuredContent {\"echo\":\"hi\"}", echo, res)
		}
	})
	t.Run("isError", func(t *testing.T) {
		res := c.result("tools/call", map[string]any{"name": prefix + "fail", "arguments": map[string]any{}}, nil)
		if res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "no such file") {
			t.Fatalf("tools/call fail = %v, want isError with the upstream's text", res)
		}
	})
	t.Run("progress and cancel", func(t *testing.T) {
		created := c.result("tools/call", map[string]any{"name": slow, "arguments": map[string]any{}}, taskCaps)
		taskID, _ := created["taskId"].(string)
		if taskID == "" {
			t.Fatalf("tools/call %s = %v, want a task", slow, created)
		}
		<-f.waiting
		before := f.cancels()
		c.waitTask(taskID, func(r map[string]any) bool { return strings.Contains(fmt.Sprint(r["statusMessage"]), "(2/3)") })
		c.result("tasks/cancel", map[string]any{"taskId": taskID}, taskCaps)
		select {
		case <-f.stopped:
		case <-time.After(time.Minute):
			t.Fatal("the upstream's call was not cancelled within a minute of tasks/cancel")
		}
		if got := f.cancels() - before; got != 1 {
			t.Fatalf("the upstream received %d notifications/cancelled, want 1", got)
		}
		c.waitTask(taskID, func(r map[string]any) bool { return r["status"] == "cancelled" })
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.calls["slow"] != 1 {
			t.Fatalf("slow was called %d times upstream, want once", f.calls["slow"])
		}
	})
	// An attempt of hang times out (its policy's 2 s): hang is neither
	// read-only nor idempotent, so it is not made again.
	t.Run("interrupted", func(t *testing.T) {
		res := c.result("tools/call", map[string]any{"name": prefix + "hang", "arguments": map[string]any{}}, nil)
		text := fmt.Sprint(res["content"])
		if res["isError"] != true || !strings.Contains(text, "may or may not have taken effect, and it was not repeated") {
			t.Fatalf("tools/call hang = %v, want an error saying the call may or may not have taken effect", res)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.calls["hang"] != 1 {
			t.Fatalf("hang was called %d times upstream, want once", f.calls["hang"])
		}
	})
	// flaky is read-only: its interrupted first attempt is made again.
	t.Run("read-only retried", func(t *testing.T) {
		res := c.result("tools/call", map[string]any{"name": prefix + "flaky", "arguments": map[string]any{}}, nil)
		if res["isError"] == true || !strings.Contains(fmt.Sprint(res["content"]), "answered") {
			t.Fatalf("tools/call flaky = %v, want the second attempt's answer", res)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.calls["flaky"] != 2 {
			t.Fatalf("flaky was called %d times upstream, want twice", f.calls["flaky"])
		}
	})
}

// serveUpstreams connects to the upstreams of file, runs a worker of
// their tools until the test ends, and returns an MCP client of a mount
// of the live catalog.
func serveUpstreams(t *testing.T, env *testenv.Env, file upstream.File) *mcpClient {
	t.Helper()
	c, _ := serveUpstreamsOn(t, env, file, upstream.Options{})
	return c
}

// serveUpstreamsOn is serveUpstreams with the options of Connect (its
// logger and environment set), and returns the worker's task queue too.
func serveUpstreamsOn(t *testing.T, env *testenv.Env, file upstream.File, opts upstream.Options) (*mcpClient, string) {
	t.Helper()
	tq := testenv.UniqueTaskQueue(t)
	serveWorker(t, env, file, opts, tq, "")
	return &mcpClient{t: t, url: serveMount(t, env)}, tq
}

// serveWorker runs a worker of the upstreams of file on tq, with the
// worker identity identity (empty: the default), until the test ends.
func serveWorker(t *testing.T, env *testenv.Env, file upstream.File, opts upstream.Options, tq, identity string) {
	t.Helper()
	// The context of Connect ends when it returns, as the commands' does:
	// the sessions outlive it.
	cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
	opts.Logger, opts.Environ = env.Logger, os.Environ()
	set, err := upstream.Connect(cctx, file, opts)
	ccancel()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	reg, err := workflows.NewRegistry(nil, set.Activities())
	if err != nil {
		cancel()
		_ = set.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- reg.WithToolSet(set).Run(ctx, env.Client, tq,
			workflows.WorkerOptions{Worker: worker.Options{Identity: identity}, CheckInterval: time.Second})
	}()
	t.Cleanup(func() { cancel(); <-done; _ = set.Close() })
}

// stdioEnv makes the test binary the fake upstream on stdin/stdout
// (TestMain).
const stdioEnv = "UPSTREAM_TEST_SERVE_STDIO"

func TestMain(m *testing.M) {
	if os.Getenv(stdioEnv) == "1" {
		os.Exit(serveStdio())
	}
	os.Exit(m.Run())
}

// A stdio upstream: the test binary itself, started by the worker.
func TestStdioUpstream(t *testing.T) {
	env := testenv.Temporal(t)
	prefix := randomPrefix()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"fake","command":%q,"env":{%q:"1"},"tools":["echo"],"prefix":%q}]}`,
		exe, stdioEnv, prefix), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	c := serveUpstreams(t, env, file)
	tools := c.waitTools(prefix + "echo")
	if len(tools) > 0 && tools[prefix+"slow"] != nil {
		t.Fatalf("tools/list lists %sslow, which the file's tools leave out", prefix)
	}
	res := c.result("tools/call", map[string]any{"name": prefix + "echo", "arguments": map[string]any{"text": "over stdio"}}, nil)
	if sc, _ := json.Marshal(res["structuredContent"]); string(sc) != `{"echo":"over stdio"}` {
		t.Fatalf("tools/call = %v, want structuredContent {\"echo\":\"over stdio\"}", res)
	}
}

// serveMount serves a Mount of the live catalog and returns its /mcp URL.
func serveMount(t *testing.T, env *testenv.Env) string {
	t.Helper()
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := mcpmount.New(mcpmount.Options{
		Runs:            runs.New(env.Client, env.Logger, runs.Options{Namespace: env.Namespace}),
		Catalog:         live,
		Logger:          env.Logger,
		PollInterval:    200 * time.Millisecond,
		MaxBlockingWait: 30 * time.Second,
		InlineWait:      -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

var taskCaps = map[string]any{"extensions": map[string]any{mcpmount.ExtensionTasks: map[string]any{}}}

// mcpClient sends MCP 2026-07-28 requests over HTTP.
type mcpClient struct {
	t   *testing.T
	url string
	id  int
	// messages are the messages of the last response that was an SSE
	// stream, in order (the last is the response).
	messages []map[string]any
}

// result sends method with params as a client of the capabilities caps
// and returns its result, failing the test on an error.
func (c *mcpClient) result(method string, params, caps map[string]any) map[string]any {
	c.t.Helper()
	res, rpcErr, raw := c.call(method, params, caps)
	if rpcErr != nil || res == nil {
		c.t.Fatalf("%s: want a result, got %s", method, raw)
	}
	return res
}

// call sends method with params as a client of the capabilities caps and
// returns its result or its error, and the response as it came.
func (c *mcpClient) call(method string, params, caps map[string]any) (res map[string]any, rpcErr *rpcError, raw []byte) {
	c.t.Helper()
	c.id++
	if caps == nil {
		caps = map[string]any{}
	}
	p := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcpmount.ProtocolVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "upstream-test", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}}
	for k, v := range params {
		if m, ok := v.(map[string]any); ok && k == "_meta" {
			for mk, mv := range m {
				p[k].(map[string]any)[mk] = mv
			}
			continue
		}
		p[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": p})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcpmount.ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ = io.ReadAll(resp.Body)
	c.messages = nil
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				raw = []byte(d)
				var m map[string]any
				_ = json.Unmarshal(raw, &m)
				c.messages = append(c.messages, m)
			}
		}
	}
	var out struct {
		Result map[string]any `json:"result"`
		Error  *rpcError      `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || (out.Result == nil && out.Error == nil) {
		c.t.Fatalf("%s: want a JSON-RPC response, got HTTP %d %s", method, resp.StatusCode, raw)
	}
	return out.Result, out.Error, raw
}

// rpcError is a JSON-RPC error.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// waitTools waits until tools/list lists every name and returns the list.
func (c *mcpClient) waitTools(names ...string) map[string]map[string]any {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		tools := map[string]map[string]any{}
		for _, x := range c.result("tools/list", map[string]any{}, nil)["tools"].([]any) {
			d := x.(map[string]any)
			tools[d["name"].(string)] = d
		}
		missing := false
		for _, n := range names {
			missing = missing || tools[n] == nil
		}
		if !missing {
			return tools
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("tools/list does not list %v within a minute: %v", names, tools)
		}
	}
}

// waitTask polls tasks/get until ok holds of its result (a minute at most).
func (c *mcpClient) waitTask(taskID string, ok func(map[string]any) bool) map[string]any {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		res := c.result("tasks/get", map[string]any{"taskId": taskID}, taskCaps)
		if ok(res) {
			return res
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s: condition not met within a minute; last %v", taskID, res)
		}
	}
}

// Connect refuses what the file asks of an upstream that it does not
// serve; an upstream it cannot reach is no error (TestUpstreamLiveness).
func TestConnectRefuses(t *testing.T) {
	url := (&fake{}).serve(t)
	tests := []struct{ name, entry, want string }{
		{"unserved tool", fmt.Sprintf(`{"name":"fake","url":%q,"tools":["nope"]}`, url), `upstream fake: tools: the upstream serves no tool "nope"`},
		{"policy of an unserved tool", fmt.Sprintf(`{"name":"fake","url":%q,"policy":{"nope":{}}}`, url), `upstream fake: policy: the upstream serves no tool "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file, err := upstream.Parse([]byte(`{"upstreams":[`+tc.entry+`]}`), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			set, err := upstream.Connect(context.Background(), file, upstream.Options{})
			if err == nil {
				_ = set.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Connect: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
