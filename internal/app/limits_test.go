package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// limitsStack is a started app (on the shared test Temporal) serving the
// MCP mount at /mcp and the REST API elsewhere over the fake run service,
// plus /test/slow (reads its body, then answers after slowFor unless its
// request was cancelled) and /test/sse (an event every 200 ms for slowFor).
type limitsStack struct {
	addr string
	runs *runstest.Fake
}

const slowFor = 3 * time.Second

func startLimitsStack(t *testing.T, mutate func(*config.Config)) *limitsStack {
	t.Helper()
	env := testenv.Temporal(t)
	cfg := config.Config{
		HTTPAddr: "127.0.0.1:0", TaskQueue: testenv.UniqueTaskQueue(t), Remote: true,
		Client: client.Options{HostPort: env.Address, Namespace: env.Namespace},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	f := runstest.New()
	cat, err := catalog.NewStatic(signals.ToolSpec{Name: "delay", Description: "waits", TaskSupport: signals.TaskOptional,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"delayMs":{"type":"number"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	handler := func(app.Deps) (http.Handler, error) {
		mount, err := mcpmount.New(mcpmount.Options{Runs: f, Catalog: cat, KeepAlive: 200 * time.Millisecond})
		if err != nil {
			return nil, err
		}
		mux := http.NewServeMux()
		mux.Handle("/mcp", mount)
		mux.HandleFunc("POST /test/slow", func(w http.ResponseWriter, r *http.Request) {
			if _, err := io.ReadAll(r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			select {
			case <-time.After(slowFor):
				_, _ = io.WriteString(w, "done")
			case <-r.Context().Done():
				_, _ = io.WriteString(w, "cancelled")
			}
		})
		mux.HandleFunc("GET /test/sse", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			rc := http.NewResponseController(w)
			for i := range int(slowFor / (200 * time.Millisecond)) {
				fmt.Fprintf(w, "data: %d\n\n", i)
				if err := rc.Flush(); err != nil {
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
			_, _ = io.WriteString(w, "data: end\n\n")
		})
		api, err := restapi.New(restapi.Options{Runs: f, Catalog: cat,
			Authenticate: func(*http.Request) (signals.Subject, error) {
				return signals.Subject{Issuer: "test", Tenant: "anon:local", SubjectID: "urn:test"}, nil
			}})
		if err != nil {
			return nil, err
		}
		mux.Handle("/", api)
		return mux, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := app.Start(ctx, cfg, testenv.Logger(), app.Parts{Handler: handler})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	return &limitsStack{addr: a.HTTPAddr, runs: f}
}

// mcpBody is a 2026-07-28 tools/call of delay without the Tasks extension:
// a blocking call.
const mcpBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},` +
	`"name":"delay","arguments":{"delayMs":1}}}`

func mcpRequest(addr, accept string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(mcpBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "delay")
	return req
}

// TestSlowDripConnectionsAreClosed: 300 connections that send their
// headers and then a byte of body a second are all closed within 30 s
// under the default limits, while normal calls (MCP, REST, /healthz) are
// served meanwhile; so are connections that send nothing or drip their
// headers.
func TestSlowDripConnectionsAreClosed(t *testing.T) {
	s := startLimitsStack(t, nil) // the defaults
	if config.DefaultHTTPReadTimeout+time.Second > 30*time.Second {
		t.Fatalf("DefaultHTTPReadTimeout %v cannot close a drip within 30 s", config.DefaultHTTPReadTimeout)
	}
	const drips, silent, headerDrips = 300, 20, 20
	type result struct {
		kind   string
		closed time.Duration // -1: still open at the end
	}
	results := make(chan result, drips+silent+headerDrips)
	start := time.Now()
	deadline := start.Add(40 * time.Second)
	var wg sync.WaitGroup
	open := func(kind string, first string, drip func(i int) string) {
		defer wg.Done()
		c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
		if err != nil {
			results <- result{kind, 0}
			t.Errorf("%s: dial: %v", kind, err)
			return
		}
		defer c.Close()
		opened := time.Now()
		closed := make(chan struct{})
		go func() { // the server closing the connection ends the read
			defer close(closed)
			_ = c.SetReadDeadline(deadline)
			_, _ = io.Copy(io.Discard, c)
		}()
		if first != "" {
			_, _ = io.WriteString(c, first)
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-closed:
				if time.Now().After(deadline) {
					results <- result{kind, -1}
				} else {
					results <- result{kind, time.Since(opened)}
				}
				return
			case <-tick.C:
				if drip != nil {
					_, _ = io.WriteString(c, drip(i))
				}
			}
		}
	}
	for i := range drips {
		path, body := "/mcp", "MCP"
		if i%2 == 1 {
			path, body = "/runs", "REST"
		}
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n", path, s.addr)
		wg.Add(1)
		go open("drip "+body, head, func(int) string { return " " })
	}
	for range silent {
		wg.Add(1)
		go open("silent", "", nil)
	}
	for range headerDrips {
		head := "GET /healthz HTTP/1.1\r\nHost: " + s.addr + "\r\nX-Slow: "
		wg.Add(1)
		go open("header drip", head, func(int) string { return "a" })
	}

	// Normal calls succeed while the drips hang on.
	time.Sleep(2 * time.Second)
	hc := &http.Client{Timeout: 10 * time.Second}
	s.runs.OnStart(func(_ runs.NewRun, snap *signals.Snapshot) {
		snap.Status, snap.StatusMessage = signals.StatusCompleted, signals.StatusCompleted.Message()
		snap.Result = &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: "done"}}}
	})
	for i := range 3 {
		resp, err := hc.Do(mcpRequest(s.addr, "application/json, text/event-stream"))
		if err != nil {
			t.Fatalf("normal MCP call %d during the drips: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "done") {
			t.Fatalf("normal MCP call %d = %d %s", i, resp.StatusCode, b)
		}
		resp, err = hc.Post("http://"+s.addr+"/runs", "application/json", strings.NewReader(`{"workflowId":"delay","inputs":{"delayMs":1}}`))
		if err != nil {
			t.Fatalf("normal REST call %d during the drips: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("normal REST call %d = %d", i, resp.StatusCode)
		}
		time.Sleep(time.Second)
	}
	resp, err := hc.Get("http://" + s.addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz during the drips: %v", err)
	}
	resp.Body.Close()

	wg.Wait()
	close(results)
	worst := map[string]time.Duration{}
	for r := range results {
		if r.closed < 0 {
			t.Errorf("a %s connection was still open after %v", r.kind, deadline.Sub(start))
			continue
		}
		if r.closed > 30*time.Second {
			t.Errorf("a %s connection was closed after %v, want within 30 s", r.kind, r.closed)
		}
		worst[r.kind] = max(worst[r.kind], r.closed)
	}
	t.Logf("slowest close per kind: %v", worst)
}

// TestIdleKeepAliveIsClosed: a keep-alive connection that carries no
// further request is closed after the configured idle timeout.
func TestIdleKeepAliveIsClosed(t *testing.T) {
	s := startLimitsStack(t, func(c *config.Config) { c.HTTPIdleTimeout = time.Second })
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 2 { // the connection is reused, then left idle
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", s.addr)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("request %d = %d close=%v", i, resp.StatusCode, resp.Close)
		}
	}
	idle := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection read = %v, want EOF (closed by the server)", err)
	}
	if d := time.Since(idle); d < 900*time.Millisecond || d > 4*time.Second {
		t.Fatalf("idle connection closed after %v, want about the 1 s idle timeout", d)
	}
}

// TestConnectionLimit: past the configured number of open connections a
// new one is not served until one closes.
func TestConnectionLimit(t *testing.T) {
	s := startLimitsStack(t, func(c *config.Config) { c.HTTPMaxConns = 3 })
	hold := make([]net.Conn, 3)
	for i := range hold {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		hold[i] = c
	}
	time.Sleep(200 * time.Millisecond) // let the server accept them
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := hc.Get("http://" + s.addr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("a 4th connection was served (%d) with 3 open and a limit of 3", resp.StatusCode)
	}
	_ = hold[0].Close()
	hc.Timeout = 5 * time.Second
	resp, err := hc.Get("http://" + s.addr + "/healthz")
	if err != nil {
		t.Fatalf("after one closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after one closed: %d", resp.StatusCode)
	}
}

// TestLongResponsesAreNotCut: with a 1 s read timeout and a 1 s idle
// timeout, a handler that answers after 3 s, an SSE stream of 3 s and a
// blocking tools/call whose run ends after 3 s (JSON and SSE) are all
// delivered whole, their requests never cancelled and the run never
// cancelled.
func TestLongResponsesAreNotCut(t *testing.T) {
	s := startLimitsStack(t, func(c *config.Config) {
		c.HTTPReadTimeout, c.HTTPIdleTimeout = time.Second, time.Second
	})
	var started atomic.Int32
	s.runs.OnStart(func(_ runs.NewRun, snap *signals.Snapshot) {
		started.Add(1)
		id := snap.RunID
		time.AfterFunc(slowFor, func() {
			s.runs.Update(id, func(x *signals.Snapshot) {
				x.Status, x.StatusMessage = signals.StatusCompleted, signals.StatusCompleted.Message()
				x.Result = &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: "finished after 3 s"}}}
			})
		})
	})
	hc := &http.Client{Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	check := func(name string, do func() (*http.Response, error), want string) {
		defer wg.Done()
		start := time.Now()
		resp, err := do()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("%s = %d %q (%v), want %q", name, resp.StatusCode, b, err, want)
		}
		if d := time.Since(start); d < slowFor-100*time.Millisecond {
			t.Errorf("%s answered after %v, before the %v it takes", name, d, slowFor)
		}
	}
	wg.Add(4)
	go check("slow handler", func() (*http.Response, error) {
		return hc.Post("http://"+s.addr+"/test/slow", "application/json", strings.NewReader(`{"a":1}`))
	}, "done")
	go check("SSE stream", func() (*http.Response, error) { return hc.Get("http://" + s.addr + "/test/sse") }, "data: end")
	go check("blocking tools/call (JSON)", func() (*http.Response, error) {
		return hc.Do(mcpRequest(s.addr, "application/json, text/event-stream"))
	}, "finished after 3 s")
	go check("blocking tools/call (SSE)", func() (*http.Response, error) {
		return hc.Do(mcpRequest(s.addr, "text/event-stream, application/json"))
	}, "finished after 3 s")
	wg.Wait()
	if n := started.Load(); n != 2 {
		t.Errorf("%d runs started, want 2", n)
	}
	if cc := s.runs.CancelCalls(); len(cc) != 0 {
		t.Errorf("runs cancelled: %+v", cc)
	}
}
