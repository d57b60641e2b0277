package mcpmount

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// awaitCounter counts the Await calls in flight (each a Temporal history
// long poll of the real run service), so a test can see them end; those
// with runs.PublishedOnly, which a listen follows a task with, too.
type awaitCounter struct {
	runs.Backend
	active atomic.Int64
}

func (a *awaitCounter) Await(ctx context.Context, caller signals.Subject, runID string, done func(signals.Snapshot) bool, opts ...runs.AwaitOption) (signals.Snapshot, error) {
	a.active.Add(1)
	defer a.active.Add(-1)
	return a.Backend.Await(ctx, caller, runID, done, opts...)
}

// sseStream is the client end of a subscriptions/listen SSE response.
type sseStream struct {
	conn net.Conn
	resp *http.Response
	br   *bufio.Reader
}

// openListen sends subscriptions/listen for taskIDs on a raw connection
// and reads the response headers.
func openListen(t *testing.T, addr, key string, id any, taskIDs []string, caps map[string]any) *sseStream {
	t.Helper()
	conn := dialCall(t, addr, wireCall{id: id, method: "subscriptions/listen", key: key, caps: caps, accept: acceptSSE,
		params: map[string]any{"notifications": map[string]any{"taskIds": taskIDs}}})
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &sseStream{conn: conn, resp: resp, br: bufio.NewReader(resp.Body)}
}

// next returns the next message of the stream, or nil at its end.
func (s *sseStream) next(t *testing.T) map[string]any {
	t.Helper()
	var data string
	for {
		line, err := s.br.ReadString('\n')
		if err == io.EOF && line == "" {
			return nil
		}
		if err != nil && err != io.EOF {
			t.Fatalf("read the stream: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && data != "":
			var msg map[string]any
			if err := json.Unmarshal([]byte(data), &msg); err != nil {
				t.Fatalf("event data %q: %v", data, err)
			}
			return msg
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		}
	}
}

func subscriptionID(msg map[string]any) any {
	p, _ := msg["params"].(map[string]any)
	if p == nil {
		p, _ = msg["result"].(map[string]any)
	}
	meta, _ := p["_meta"].(map[string]any)
	return meta["io.modelcontextprotocol/subscriptionId"]
}

// TestListen follows tasks on subscriptions/listen streams against the real
// stack: the acknowledgement lists only the ids the caller may read, each
// change of a run is pushed in order from its history, the stream ends once
// every task is terminal, and a client that leaves ends the long polls.
func TestListen(t *testing.T) {
	var counter *awaitCounter
	var late string // a task queue no worker polls until the test starts one
	s := newStackWith(t, keysFor(t, "ka=acme:alice,kb=globex:bob"), "", func(o *Options) func(*Mount) {
		env := testenv.Temporal(t)
		late = testenv.UniqueTaskQueue(t)
		counter = &awaitCounter{Backend: runs.New(env.Client, env.Logger, runs.Options{TaskQueue: late, Namespace: env.Namespace})}
		o.Runs = counter
		o.KeepAlive = 50 * time.Millisecond
		return nil
	})
	alice := s.client(t, "ka", tasksCaps())
	bob := s.client(t, "kb", tasksCaps())

	// Both runs wait for a worker: they read working until it starts.
	report := callTool(t, alice, "publish_report", map[string]any{"title": "Q3", "topic": "sales", "sections": 1})["taskId"].(string)
	foreign := callTool(t, bob, "slow_compute", map[string]any{"seconds": 0})["taskId"].(string)

	unknown := "acme~2F" + strings.Repeat("A", 24)
	st := openListen(t, s.addr(), "ka", "listen:1", []string{foreign, report, unknown, "nope", report}, tasksCaps())
	if st.resp.StatusCode != http.StatusOK || st.resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("listen = HTTP %d %q", st.resp.StatusCode, st.resp.Header.Get("Content-Type"))
	}
	ack := st.next(t)
	acked, _ := ack["params"].(map[string]any)["notifications"].(map[string]any)
	if ack["method"] != "notifications/subscriptions/acknowledged" || subscriptionID(ack) != "listen:1" ||
		fmt.Sprint(acked["taskIds"]) != fmt.Sprint([]any{report}) {
		t.Fatalf("ack = %v, want taskIds [%s] only", ack, report)
	}

	var statuses []string
	started := false
	for {
		msg := st.next(t)
		if msg == nil {
			t.Fatalf("the stream ended before the listen result (statuses %v)", statuses)
		}
		if _, ok := msg["result"]; ok {
			if msg["id"] != "listen:1" || subscriptionID(msg) != "listen:1" {
				t.Fatalf("listen result = %v", msg)
			}
			break
		}
		p, _ := msg["params"].(map[string]any)
		if msg["method"] != "notifications/tasks" || p["taskId"] != report || subscriptionID(msg) != "listen:1" {
			t.Fatalf("notification = %v", msg)
		}
		if _, ok := p["resultType"]; ok {
			t.Fatalf("notification carries resultType: %v", msg)
		}
		status := p["status"].(string)
		statuses = append(statuses, status)
		switch status {
		case "working":
			if !started {
				// Now let the run move.
				started = true
				reg, err := conformancetools.Registry(s.acts)
				if err != nil {
					t.Fatal(err)
				}
				s.env.NewWorker(t, late, reg.Register)
			}
		case "input_required":
			reqs, _ := p["inputRequests"].(map[string]any)
			if len(reqs) != 1 {
				t.Fatalf("input_required without its input request: %v", msg)
			}
			for key := range reqs {
				wantResult(t, alice.call("tasks/update", map[string]any{"taskId": report,
					"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"action": "accept"}}}}, nil))
			}
		case "completed":
			if r, _ := p["result"].(map[string]any); r == nil || !strings.Contains(text(t, r), "published") {
				t.Fatalf("completed without its result: %v", msg)
			}
		}
	}
	// Each step's status message is a notification of its own.
	if got := strings.Join(statuses, ","); !regexp.MustCompile(`^(working,)+input_required,(working,)*completed$`).MatchString(got) {
		t.Fatalf("statuses = %s, want working, input_required, completed in order", got)
	}
	if msg := st.next(t); msg != nil {
		t.Fatalf("message after the listen result: %v", msg)
	}

	t.Run("client leaves", func(t *testing.T) {
		id := callTool(t, alice, "slow_compute", map[string]any{"seconds": 60})["taskId"].(string)
		t.Cleanup(func() { alice.call("tasks/cancel", map[string]any{"taskId": id}, nil) })
		st := openListen(t, s.addr(), "ka", 7, []string{id}, tasksCaps())
		if ack := st.next(t); ack["method"] != "notifications/subscriptions/acknowledged" || subscriptionID(ack) != float64(7) {
			t.Fatalf("ack = %v", ack)
		}
		if n := st.next(t); n["method"] != "notifications/tasks" {
			t.Fatalf("first notification = %v", n)
		}
		if got := counter.active.Load(); got != 1 {
			t.Fatalf("%d history long polls in flight, want 1", got)
		}
		st.conn.Close()
		deadline := time.Now().Add(20 * time.Second)
		for counter.active.Load() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d history long polls still in flight after the client left", counter.active.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		// taskIds without the extension.
		c := s.client(t, "ka", map[string]any{})
		r := c.call("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{report}}}, nil)
		wantError(t, r, http.StatusBadRequest, -32021)
		if !strings.Contains(string(r.Error.Data), ExtensionTasks) {
			t.Fatalf("data = %s", r.Error.Data)
		}
		// The checks of every 2026-07-28 request come first.
		r = alice.call("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{report}}},
			map[string]string{"Mcp-Method": "tools/list"})
		wantError(t, r, http.StatusBadRequest, -32020)
		alice.key = ""
		r = alice.call("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{report}}}, nil)
		alice.key = "ka"
		if r.Status != http.StatusUnauthorized {
			t.Fatalf("no credential: HTTP %d", r.Status)
		}
		wantError(t, alice.call("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": "x"}}, nil),
			http.StatusBadRequest, -32602)
		wantError(t, alice.call("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{report}}},
			map[string]string{"Accept": "application/json"}), http.StatusBadRequest, -32600)
	})

	t.Run("shutdown", func(t *testing.T) {
		// At shutdown the stream ends with the listen result, though its
		// task goes on.
		id := callTool(t, alice, "slow_compute", map[string]any{"seconds": 60})["taskId"].(string)
		t.Cleanup(func() { alice.call("tasks/cancel", map[string]any{"taskId": id}, nil) })
		st := openListen(t, s.addr(), "ka", "listen:2", []string{id}, tasksCaps())
		st.next(t) // ack
		if n := st.next(t); n["method"] != "notifications/tasks" {
			t.Fatalf("first notification = %v", n)
		}
		_ = s.mount.Shutdown(context.Background())
		if msg := st.next(t); msg["id"] != "listen:2" || msg["result"] == nil {
			t.Fatalf("after Shutdown: %v, want the listen result", msg)
		}
		if msg := st.next(t); msg != nil {
			t.Fatalf("message after the listen result: %v", msg)
		}
		if got := counter.active.Load(); got != 0 {
			t.Fatalf("%d history long polls in flight after the stream ended", got)
		}
	})
}
