package mcpmount

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
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/openwop/temporal-mcp/mcpmount/internal/modern"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// Accept headers of the two response modes.
const (
	acceptJSON = "application/json, text/event-stream"
	acceptSSE  = "text/event-stream, application/json"
)

// probe wraps the real run service of a stack and the mount's afterStart
// hook, so wire tests can learn the runId a blocking call started and hold
// a request at a chosen point until its client is known to be gone. It
// never changes what the run service does.
type probe struct {
	runs.Backend

	started chan string // every runId, in start order

	mu   sync.Mutex
	ctxs map[string]context.Context // Start's request context, by runId
	// holdStart makes afterStart wait until the starting request's
	// context ends (the server noticed the client leave).
	holdStart bool
	// holdInStart makes Start, once the run exists, wait until the
	// request's context ends before it returns (before the request can
	// record that it owns the run).
	holdInStart bool
	// holdAwaits makes the next holdAwaits Await calls wait until their
	// request context ends before they look at the run.
	holdAwaits int
	held       chan string // runIds whose start or await is being held
}

// withProbe is a newStackWith configure function that installs a probe,
// with more adjusting the Options further (nil for none).
func withProbe(p **probe, more func(*Options)) func(*Options) func(*Mount) {
	return func(o *Options) func(*Mount) {
		pr := &probe{Backend: o.Runs, started: make(chan string, 1024), ctxs: map[string]context.Context{}, held: make(chan string, 64)}
		*p = pr
		o.Runs = pr
		if more != nil {
			more(o)
		}
		return func(m *Mount) { m.afterStart = pr.afterStart }
	}
}

// Start records the request context of the new run.
func (p *probe) Start(ctx context.Context, req runs.NewRun) (signals.Snapshot, error) {
	snap, err := p.Backend.Start(ctx, req)
	if err != nil {
		return snap, err
	}
	p.mu.Lock()
	p.ctxs[snap.RunID] = ctx
	hold := p.holdInStart
	p.mu.Unlock()
	if hold {
		p.held <- snap.RunID
		waitDone(ctx)
	}
	return snap, nil
}

func (p *probe) afterStart(runID string) {
	p.started <- runID
	p.mu.Lock()
	hold, ctx := p.holdStart, p.ctxs[runID]
	p.mu.Unlock()
	if hold && ctx != nil {
		p.held <- runID
		waitDone(ctx)
	}
}

// Await optionally holds the call until its request context ends, then
// awaits the run as the real service does (with runs.PublishedOnly or
// not: the probe holds either alike).
func (p *probe) Await(ctx context.Context, caller signals.Subject, runID string, done func(signals.Snapshot) bool, opts ...runs.AwaitOption) (signals.Snapshot, error) {
	p.mu.Lock()
	hold := p.holdAwaits > 0
	if hold {
		p.holdAwaits--
	}
	p.mu.Unlock()
	if hold {
		p.held <- runID
		waitDone(ctx)
	}
	return p.Backend.Await(ctx, caller, runID, done, opts...)
}

// waitDone waits until ctx ends, at most 30 s (a test that relies on it
// then fails on its own assertions instead of hanging).
func waitDone(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
}

// next returns the runId of the next run started.
func (p *probe) next(t testing.TB) string {
	t.Helper()
	select {
	case id := <-p.started:
		return id
	case <-time.After(20 * time.Second):
		t.Fatal("no run started")
		return ""
	}
}

// nextHeld returns the runId of the next request being held.
func (p *probe) nextHeld(t testing.TB) string {
	t.Helper()
	select {
	case id := <-p.held:
		return id
	case <-time.After(20 * time.Second):
		t.Fatal("no request reached the hold point")
		return ""
	}
}

// modernMetaFor is the required 2026-07-28 _meta with caps.
func modernMetaFor(caps map[string]any) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    ProtocolVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "wire-test", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
}

// rpcBody is a JSON-RPC request with the _meta of caps added to params
// (to the entries of params["_meta"], when it holds some).
func rpcBody(id any, method string, params map[string]any, caps map[string]any) []byte {
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	meta := modernMetaFor(caps)
	if extra, ok := params["_meta"].(map[string]any); ok {
		for k, v := range extra {
			meta[k] = v
		}
	}
	p["_meta"] = meta
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	if err != nil {
		panic(err)
	}
	return b
}

// wireCall is one 2026-07-28 request written by hand on a raw socket.
type wireCall struct {
	id     any
	method string
	params map[string]any
	caps   map[string]any
	accept string // acceptJSON when empty
	key    string // API key, none when empty
}

func toolCall(id any, name string, args map[string]any, caps map[string]any, accept string) wireCall {
	return wireCall{id: id, method: "tools/call", params: map[string]any{"name": name, "arguments": args}, caps: caps, accept: accept}
}

// dialCall opens a TCP connection to addr and writes c as an HTTP/1.1
// POST, so the test controls exactly when the connection closes.
func dialCall(t testing.TB, addr string, c wireCall) net.Conn {
	t.Helper()
	conn, err := writeCall(addr, c)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// writeCall is dialCall reporting its error (for use off the test
// goroutine).
func writeCall(addr string, c wireCall) (net.Conn, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	body := rpcBody(c.id, c.method, c.params, c.caps)
	accept := c.accept
	if accept == "" {
		accept = acceptJSON
	}
	var b strings.Builder
	fmt.Fprintf(&b, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: %s\r\n", addr, accept)
	fmt.Fprintf(&b, "MCP-Protocol-Version: %s\r\nMcp-Method: %s\r\n", ProtocolVersion, c.method)
	if field, ok := modern.NameField(c.method); ok {
		if v, ok := c.params[field].(string); ok {
			fmt.Fprintf(&b, "Mcp-Name: %s\r\n", v)
		}
	}
	if c.key != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", c.key)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		conn.Close()
		return nil, fmt.Errorf("write request: %w", err)
	}
	return conn, nil
}

// readRPC reads the whole HTTP response to a dialCall and decodes its
// JSON-RPC message (for SSE, the data of the last event).
func readRPC(t testing.TB, conn net.Conn) rpc {
	t.Helper()
	r, err := readReply(conn)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readReply is readRPC reporting its error.
func readReply(conn net.Conn) (rpc, error) {
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return rpc{}, fmt.Errorf("read response: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return rpc{}, fmt.Errorf("read response body: %w", err)
	}
	out := rpc{}
	msg := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				msg = []byte(d)
			}
		}
	}
	if len(msg) > 0 && msg[0] == '{' {
		if err := json.Unmarshal(msg, &out); err != nil {
			return rpc{}, fmt.Errorf("decode response %q: %w", msg, err)
		}
	}
	out.Status, out.Header, out.Raw = resp.StatusCode, resp.Header, msg
	return out, nil
}

// addr is the stack's host:port.
func (s *stack) addr() string { return s.Listener.Addr().String() }

// awaitEnd waits (at most d) until the run is terminal and returns it.
func (s *stack) awaitEnd(t testing.TB, caller signals.Subject, runID string, d time.Duration) signals.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	snap, err := s.runs.Await(ctx, caller, runID, func(s signals.Snapshot) bool { return s.Status.Terminal() })
	if err != nil {
		t.Fatalf("run %s did not end within %s: %v (last %s)", runID, d, err, snap.Status)
	}
	return snap
}

// awaitActivityStarted waits until a worker has picked up an activity of
// the run, so a cancellation now must reach a running activity.
func (s *stack) awaitActivityStarted(t testing.TB, runID string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		d, err := s.env.Client.DescribeWorkflowExecution(context.Background(), runID, "")
		if err != nil {
			t.Fatalf("describe %s: %v", runID, err)
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no activity of run %s started", runID)
}

// wantCancelledByRequest fails unless the run ended cancelled because the
// request that owned it went away.
func wantCancelledByRequest(t testing.TB, snap signals.Snapshot) {
	t.Helper()
	if snap.Status != signals.StatusCancelled || snap.CancelReason != signals.ReasonMCPRequestCancelled {
		t.Fatalf("run %s = %s (reason %q), want cancelled (reason %q)", snap.RunID, snap.Status, snap.CancelReason,
			signals.ReasonMCPRequestCancelled)
	}
}
