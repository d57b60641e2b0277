package mcpmount

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// layerBench is a mount over an in-memory run service holding one working
// run, and a 2026-07-28 tasks/get of it: everything of a tasks/get but
// Temporal.
type layerBench struct {
	mount *Mount
	task  string
	body  []byte
}

func newLayerBench(b *testing.B) *layerBench {
	b.Helper()
	fake := runstest.New()
	m, err := New(Options{Runs: fake, Catalog: staticCatalog(b, testCatalog()...)})
	if err != nil {
		b.Fatal(err)
	}
	id, err := runid.New(auth.Anonymous().Tenant, nil)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	fake.Add(signals.Snapshot{RunID: id, Tool: "slow", Status: signals.StatusRunning,
		Owner: signals.Owner{Tenant: auth.Anonymous().Tenant, Subject: auth.Anonymous()}, CreatedAt: now, UpdatedAt: now})
	task := runid.Project(id)
	return &layerBench{mount: m, task: task, body: rpcBody(1, "tasks/get", map[string]any{"taskId": task}, tasksCaps())}
}

// request is the tasks/get as a client sends it to url ("": a server-side
// request for a recorder).
func (l *layerBench) request(url string) *http.Request {
	return benchRequest(url, "tasks/get", l.task, l.body)
}

// benchRequest is a 2026-07-28 POST of body with the standard headers, to
// url ("": a server-side request for a recorder).
func benchRequest(url, method, name string, body []byte) *http.Request {
	var req *http.Request
	if url == "" {
		req = httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
	} else {
		req, _ = http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptJSON)
	req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	return req
}

// BenchmarkTasksGetLayer measures one tasks/get over real HTTP (client
// included) with an in-memory run service.
func BenchmarkTasksGetLayer(b *testing.B) {
	l := newLayerBench(b)
	srv := httptest.NewServer(l.mount)
	defer srv.Close()
	c := srv.Client()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Do(l.request(srv.URL))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"status":"working"`)) {
			b.Fatalf("HTTP %d %s", resp.StatusCode, out)
		}
	}
}

// BenchmarkTasksGetHandler is BenchmarkTasksGetLayer without HTTP: the
// mount's ServeHTTP alone, on a recorder.
func BenchmarkTasksGetHandler(b *testing.B) {
	l := newLayerBench(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec := httptest.NewRecorder()
		l.mount.ServeHTTP(rec, l.request(""))
		if rec.Code != http.StatusOK {
			b.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
	}
}

// bareHandler is the baseline of BenchmarkOwnCost: a net/http JSON-RPC
// handler that reads the body, decodes the message and answers an empty
// result, with nothing of MCP.
func bareHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{}})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// BenchmarkOwnCost is the adapter's own cost: requests the mount answers
// without Temporal (tools/list, and a tasks/get refused for a malformed
// task id), each over real HTTP on loopback (client included), against a
// bare net/http JSON-RPC handler in the same process and run. The bare
// sub-benchmark times the bare handler alone; each method's sub-benchmark
// interleaves its requests with the bare handler's, request by request,
// so that both see the same load, and reports its time per request
// (ns/op), the bare handler's in the same loop ("bare-ns/op") and their
// ratio ("x-bare"; the target is at most 2).
func BenchmarkOwnCost(b *testing.B) {
	l := newLayerBench(b)
	mount := httptest.NewServer(l.mount)
	defer mount.Close()
	bare := httptest.NewServer(http.HandlerFunc(bareHandler))
	defer bare.Close()
	list := rpcBody(1, "tools/list", map[string]any{}, tasksCaps())
	refused := rpcBody(1, "tasks/get", map[string]any{"taskId": "nope"}, tasksCaps())
	bareCase := ownCostCase{url: bare.URL, method: "tools/list", body: list, status: http.StatusOK}
	cases := []struct {
		name string
		c    ownCostCase
	}{
		{"tools-list", ownCostCase{url: mount.URL, method: "tools/list", body: list, status: http.StatusOK}},
		{"tasks-get-refused", ownCostCase{url: mount.URL, method: "tasks/get", name: "nope", body: refused, status: http.StatusBadRequest}},
	}
	// Warm both servers' connections.
	for i := 0; i < 50; i++ {
		bareCase.do(b)
		for _, c := range cases {
			c.c.do(b)
		}
	}
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			bareCase.do(b)
		}
	})
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var mountD, bareD time.Duration
			for i := 0; i < b.N; i++ {
				bareD += bareCase.do(b)
				mountD += c.c.do(b)
			}
			b.ReportMetric(float64(mountD.Nanoseconds())/float64(b.N), "ns/op")
			b.ReportMetric(float64(bareD.Nanoseconds())/float64(b.N), "bare-ns/op")
			b.ReportMetric(float64(mountD)/float64(bareD), "x-bare")
		})
	}
}

// ownCostCase is one request of BenchmarkOwnCost and the status it is
// answered with.
type ownCostCase struct {
	url, method, name string
	body              []byte
	status            int
}

// do posts the request and returns how long the exchange took.
func (c ownCostCase) do(b *testing.B) time.Duration {
	req := benchRequest(c.url, c.method, c.name, c.body)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode != c.status {
		b.Fatalf("%s: HTTP %d, want %d", c.method, resp.StatusCode, c.status)
	}
	return d
}
