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

	"github.com/openwop/temporal-mcp/internal/runid"
	"github.com/openwop/temporal-mcp/internal/runstest"
	"github.com/openwop/temporal-mcp/signals"
)

// BenchmarkTasksGetLayer measures what the HTTP and MCP layer of the mount
// costs for one tasks/get over real HTTP, with an in-memory run service:
// everything but Temporal.
func BenchmarkTasksGetLayer(b *testing.B) {
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
	fake.Add(signals.Snapshot{RunID: id, WorkflowID: "slow", Status: signals.StatusRunning,
		Owner: signals.Owner{Tenant: auth.Anonymous().Tenant, Subject: auth.Anonymous()}, CreatedAt: now, UpdatedAt: now})
	srv := httptest.NewServer(m)
	defer srv.Close()
	task := runid.Project(id)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": map[string]any{
		"taskId": task,
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    ProtocolVersion,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench", "version": "0"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}},
		}}})
	c := srv.Client()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
		req.Header.Set("Mcp-Method", "tasks/get")
		req.Header.Set("Mcp-Name", task)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(out, []byte(`"status":"working"`)) {
			b.Fatalf("HTTP %d %s", resp.StatusCode, out)
		}
	}
}

// BenchmarkTasksGetHandler is BenchmarkTasksGetLayer without HTTP: the
// mount's ServeHTTP alone, on a recorder.
func BenchmarkTasksGetHandler(b *testing.B) {
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
	fake.Add(signals.Snapshot{RunID: id, WorkflowID: "slow", Status: signals.StatusRunning,
		Owner: signals.Owner{Tenant: auth.Anonymous().Tenant, Subject: auth.Anonymous()}, CreatedAt: now, UpdatedAt: now})
	task := runid.Project(id)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": map[string]any{
		"taskId": task,
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    ProtocolVersion,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench", "version": "0"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}},
		}}})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
		req.Header.Set("Mcp-Method", "tasks/get")
		req.Header.Set("Mcp-Name", task)
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
	}
}
