package upstream_test

// The upstreams' tools follow their servers: down at start then up, tools
// added, changed and removed (notifications/tools/list_changed), the
// server stopped. And what an upstream learns of the caller.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/upstream"
	"github.com/openwop/temporal-mcp/signals"
)

// fastOptions notice an upstream gone, and connect again, within a
// second.
var fastOptions = upstream.Options{ProbeInterval: 200 * time.Millisecond, MinBackoff: 100 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}

// addTool adds a tool named name that answers text to s.
func addTool(s *mcp.Server, name, description string, annotations *mcp.ToolAnnotations) {
	mcp.AddTool(s, &mcp.Tool{Name: name, Description: description, Annotations: annotations},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
}

func TestUpstreamLiveness(t *testing.T) {
	env := testenv.Temporal(t)
	s := mcp.NewServer(&mcp.Implementation{Name: "live", Version: "1"}, nil)
	addTool(s, "echo", "Echoes.", &mcp.ToolAnnotations{ReadOnlyHint: true})
	addTool(s, "write", "Writes.", nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var up atomic.Bool // while false, the upstream answers 503
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	prefix := randomPrefix()
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"live","url":%q,"prefix":%q}]}`, srv.URL, prefix), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, tq := serveUpstreamsOn(t, env, file, fastOptions)
	echo, write, extra := prefix+"echo", prefix+"write", prefix+"extra"

	t.Run("down at start, then up", func(t *testing.T) {
		if tools := c.list(); tools[echo] != nil {
			t.Fatalf("tools/list lists %s of an upstream that does not answer", echo)
		}
		up.Store(true)
		c.waitTools(echo, write)
		res := c.result("tools/call", map[string]any{"name": echo, "arguments": map[string]any{}}, nil)
		if !strings.Contains(fmt.Sprint(res["content"]), "echo") || res["isError"] == true {
			t.Fatalf("tools/call %s = %v, want the upstream's answer", echo, res)
		}
	})
	t.Run("tool added", func(t *testing.T) {
		addTool(s, "extra", "Extra.", nil)
		if d := c.waitList("lists "+extra, func(l toolList) bool { return l[extra] != nil })[extra]["description"]; d != "Extra." {
			t.Fatalf("description of %s = %v, want Extra.", extra, d)
		}
	})
	t.Run("tool changed", func(t *testing.T) {
		addTool(s, "extra", "Extra, changed.", &mcp.ToolAnnotations{ReadOnlyHint: true})
		c.waitList("the changed "+extra, func(l toolList) bool { return l[extra] != nil && l[extra]["description"] == "Extra, changed." })
	})
	t.Run("tool removed", func(t *testing.T) {
		s.RemoveTools("extra")
		if l := c.waitList("no "+extra, func(l toolList) bool { return l[extra] == nil }); l[echo] == nil {
			t.Fatalf("tools/list lost %s with %s: %v", echo, extra, l)
		}
	})
	t.Run("upstream stopped", func(t *testing.T) {
		srv.CloseClientConnections()
		srv.Close()
		c.waitList("none of the upstream's tools", func(l toolList) bool { return l[echo] == nil && l[write] == nil })
		res, rpcErr, raw := c.call("tools/call", map[string]any{"name": echo, "arguments": map[string]any{}}, nil)
		if res != nil || rpcErr == nil || !strings.Contains(rpcErr.Message, "unavailable") {
			t.Fatalf("tools/call %s of a gone upstream: %s, want an error saying the tool is unavailable", echo, raw)
		}
	})
	// A run started when its upstream is gone (here, one a client of the
	// catalog could not start any more) fails at once, naming it.
	t.Run("call while down", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: testenv.UniqueID("upstream-down-"), TaskQueue: tq},
			write, signals.StartRequest{Arguments: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		err = run.Get(ctx, nil)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != upstream.CodeUpstreamUnavailable ||
			!strings.Contains(appErr.Error(), "upstream live is not connected, so the call was not sent") {
			t.Fatalf("run of %s: %v, want %s naming the upstream", write, err, upstream.CodeUpstreamUnavailable)
		}
	})
}

// who is an upstream that records the caller each call of its tool who
// carried: headers and _meta.
type who struct {
	mu    sync.Mutex
	calls map[string]whoCall // by the call's text argument
}

type whoCall struct {
	tenant, subject string
	meta            any
}

func (w *who) serve(t *testing.T) string {
	w.calls = map[string]whoCall{}
	s := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "who", Description: "Tells who called."},
		func(_ context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.calls[in.Text] = whoCall{tenant: req.Extra.Header.Get("X-Caller-Tenant"), subject: req.Extra.Header.Get("X-Caller-Subject"),
				meta: req.Params.Meta["com.example/caller"]}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL
}

// By default an upstream learns nothing of the caller; with forwardCaller
// its calls carry the tenant and subject in headers and _meta.
func TestForwardCaller(t *testing.T) {
	env := testenv.Temporal(t)
	w := &who{}
	url := w.serve(t)
	prefix := randomPrefix()
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[
		{"name":"plain","url":%[1]q,"prefix":"%[2]splain_"},
		{"name":"told","url":%[1]q,"prefix":"%[2]stold_",
		 "forwardCaller":{"tenantHeader":"X-Caller-Tenant","subjectHeader":"X-Caller-Subject","meta":"com.example/caller"}}]}`,
		url, prefix), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := serveUpstreamsOn(t, env, file, upstream.Options{})
	c.waitTools(prefix+"plain_who", prefix+"told_who")
	for _, name := range []string{"plain", "told"} {
		res := c.result("tools/call", map[string]any{"name": prefix + name + "_who", "arguments": map[string]any{"text": name}}, nil)
		if res["isError"] == true {
			t.Fatalf("tools/call %s_who = %v", name, res)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if got := w.calls["plain"]; got != (whoCall{}) {
		t.Errorf("the upstream without forwardCaller was told %+v, want nothing", got)
	}
	told := w.calls["told"]
	if told.tenant != auth.AnonymousTenant || told.subject != auth.AnonymousSubject {
		t.Errorf("the upstream with forwardCaller got headers tenant %q subject %q, want %q and %q",
			told.tenant, told.subject, auth.AnonymousTenant, auth.AnonymousSubject)
	}
	if want := map[string]any{"tenant": auth.AnonymousTenant, "subject": auth.AnonymousSubject}; fmt.Sprint(told.meta) != fmt.Sprint(want) {
		t.Errorf("the upstream with forwardCaller got _meta %v, want %v", told.meta, want)
	}
}

// toolList is a tools/list by name.
type toolList = map[string]map[string]any

// list is one tools/list.
func (c *mcpClient) list() toolList {
	c.t.Helper()
	tools := toolList{}
	for _, x := range c.result("tools/list", map[string]any{}, nil)["tools"].([]any) {
		d := x.(map[string]any)
		tools[d["name"].(string)] = d
	}
	return tools
}

// waitList waits until ok holds of tools/list (a minute at most) and
// returns the list.
func (c *mcpClient) waitList(what string, ok func(toolList) bool) toolList {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		l := c.list()
		if ok(l) {
			return l
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("tools/list: want %s within a minute; last %v", what, l)
		}
	}
}

// startsEnv names a file the stdio fake appends a line to each time it
// starts; with it, the fake also serves quit, which ends the process just
// after it answers.
const startsEnv = "UPSTREAM_TEST_STARTS"

// serveStdio is the stdio fake (TestMain); it returns the exit code.
func serveStdio() int {
	s := (&fake{}).server()
	if path := os.Getenv(startsEnv); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			_, err = f.WriteString("started\n")
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake upstream:", err)
			return 1
		}
		mcp.AddTool(s, &mcp.Tool{Name: "quit", Description: "Ends the server."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				go func() { time.Sleep(100 * time.Millisecond); os.Exit(0) }()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "bye"}}}, nil, nil
			})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fake upstream:", err)
		return 1
	}
	return 0
}

// A stdio upstream whose process exits is started again, and serves.
func TestStdioUpstreamRestarts(t *testing.T) {
	env := testenv.Temporal(t)
	prefix := randomPrefix()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	starts := filepath.Join(t.TempDir(), "starts")
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"fake","command":%q,"env":{%q:"1",%q:%q},"tools":["echo","quit"],"prefix":%q}]}`,
		exe, stdioEnv, startsEnv, starts, prefix), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := serveUpstreamsOn(t, env, file, fastOptions)
	c.waitTools(prefix+"echo", prefix+"quit")
	if res := c.result("tools/call", map[string]any{"name": prefix + "quit", "arguments": map[string]any{}}, nil); !strings.Contains(fmt.Sprint(res["content"]), "bye") {
		t.Fatalf("tools/call quit = %v", res)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		raw, _ := os.ReadFile(starts)
		if strings.Count(string(raw), "started") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream's process was not started again within a minute of its exit (%q)", raw)
		}
	}
	c.waitTools(prefix + "echo")
	// echo is read-only: an attempt made before the worker saw the new
	// process is made again.
	res := c.result("tools/call", map[string]any{"name": prefix + "echo", "arguments": map[string]any{"text": "again"}}, nil)
	if sc, _ := json.Marshal(res["structuredContent"]); string(sc) != `{"echo":"again"}` {
		t.Fatalf("tools/call echo after the restart = %v, want structuredContent {\"echo\":\"again\"}", res)
	}
}

// Two workers serve one upstream (replicas): when a tool's schema
// changes, each sees the other's earlier spec for a moment, and both
// still publish the change.
func TestUpstreamReplicasFollowAChange(t *testing.T) {
	env := testenv.Temporal(t)
	s := mcp.NewServer(&mcp.Implementation{Name: "shared", Version: "1"}, nil)
	addTool(s, "tool", "Version 1.", nil)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	prefix := randomPrefix()
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"shared","url":%q,"prefix":%q}]}`, srv.URL, prefix), nil)
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	serveWorker(t, env, file, fastOptions, tq, "replica-a@"+tq)
	serveWorker(t, env, file, fastOptions, tq, "replica-b@"+tq)
	c := &mcpClient{t: t, url: serveMount(t, env)}
	name := prefix + "tool"
	c.waitList(name+" of version 1", func(l toolList) bool { return l[name] != nil && l[name]["description"] == "Version 1." })
	addTool(s, "tool", "Version 2.", nil)
	c.waitList(name+" of version 2", func(l toolList) bool { return l[name] != nil && l[name]["description"] == "Version 2." })
}
