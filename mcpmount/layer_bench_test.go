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
// bare net/http JSON-RPC handler in the same process and run. Each method's
// sub-benchmark reports its time per request over the bare handler's as
// "x-bare" (the target is at most 2).
func BenchmarkOwnCost(b *testing.B) {
	l := newLayerBench(b)
	mount := httptest.NewServer(l.mount)
	defer mount.Close()
	bare := httptest.NewServer(http.HandlerFunc(bareHandler))
	defer bare.Close()
	list := rpcBody(1, "tools/list", map[string]any{}, tasksCaps())
	refused := rpcBody(1, "tasks/get", map[string]any{"taskId": "nope"}, tasksCaps())
	cases := []struct {
		name, url, method, mcpName string
		body                       []byte
		status                     int
	}{
		{"bare", bare.URL, "tools/list", "", list, http.StatusOK},
		{"tools-list", mount.URL, "tools/list", "", list, http.StatusOK},
		{"tasks-get-refused", mount.URL, "tasks/get", "nope", refused, http.StatusBadRequest},
	}
	// Warm both servers' connections.
	for _, c := range cases {
		ownCostRound(b, c.url, c.method, c.mcpName, c.body, c.status, 50)
	}
	var bareNs float64
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			start := time.Now()
			ownCostRound(b, c.url, c.method, c.mcpName, c.body, c.status, b.N)
			ns := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			if c.name == "bare" {
				bareNs = ns
				return
			}
			if bareNs > 0 {
				b.ReportMetric(ns/bareNs, "x-bare")
			}
		})
	}
}

// ownCostRound posts body n times to url and checks each answer's status.
func ownCostRound(b *testing.B, url, method, name string, body []byte, status, n int) {
	c := http.DefaultClient
	for i := 0; i < n; i++ {
		resp, err := c.Do(benchRequest(url, method, name, body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status {
			b.Fatalf("%s: HTTP %d, want %d", method, resp.StatusCode, status)
		}
	}
}
