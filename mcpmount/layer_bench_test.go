package mcpmount

import (
	"bytes"
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
// Temporal. sdkOnly routes every request through the SDK's handler, as
// before the direct path (the baseline of the benchmarks below).
type layerBench struct {
	mount *Mount
	task  string
	body  []byte
}

func newLayerBench(b *testing.B, sdkOnly bool) *layerBench {
	b.Helper()
	fake := runstest.New()
	m, err := New(Options{Runs: fake, Catalog: staticCatalog(b, testCatalog()...)})
	if err != nil {
		b.Fatal(err)
	}
	m.sdkOnly = sdkOnly
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
	var req *http.Request
	if url == "" {
		req = httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(l.body))
	} else {
		req, _ = http.NewRequest(http.MethodPost, url, bytes.NewReader(l.body))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptJSON)
	req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
	req.Header.Set("Mcp-Method", "tasks/get")
	req.Header.Set("Mcp-Name", l.task)
	return req
}

// paths are the two routes the benchmarks compare.
var paths = []struct {
	name    string
	sdkOnly bool
}{{"direct", false}, {"sdk", true}}

// BenchmarkTasksGetLayer measures one tasks/get over real HTTP (client
// included) with an in-memory run service, answered by the mount's direct
// path and, as the baseline, through the SDK's handler.
func BenchmarkTasksGetLayer(b *testing.B) {
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			l := newLayerBench(b, p.sdkOnly)
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
		})
	}
}

// BenchmarkTasksGetHandler is BenchmarkTasksGetLayer without HTTP: the
// mount's ServeHTTP alone, on a recorder.
func BenchmarkTasksGetHandler(b *testing.B) {
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			l := newLayerBench(b, p.sdkOnly)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec := httptest.NewRecorder()
				l.mount.ServeHTTP(rec, l.request(""))
				if rec.Code != http.StatusOK {
					b.Fatalf("HTTP %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
