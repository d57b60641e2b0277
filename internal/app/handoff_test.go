package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/workflows"
)

// napOut is the output of the nap tools.
type napOut struct {
	Slept string `json:"slept"`
}

// nap sleeps five seconds.
func nap(ctx workflow.Context, _ struct{}) (napOut, error) {
	if err := workflow.Sleep(ctx, 5*time.Second); err != nil {
		return napOut{}, err
	}
	return napOut{Slept: "5s"}, nil
}

// TestServerHandoffSettings: the server's handoff bound
// (ServerOptions.MaxBlockingWait, OPENWOP_MAX_BLOCKING_WAIT) reaches the
// MCP mount, a tool's own (workflows.WithHandoffAfter) reaches it through
// the published catalog and wins, and ServerOptions.NoRunListTool
// (OPENWOP_RUN_LIST_TOOL=off) takes openwop_run_list away. With a 1 s
// server bound a five-second tool is handed over; the same tool with a
// bound of its own of a minute answers its result.
func TestServerHandoffSettings(t *testing.T) {
	env := testenv.Temporal(t)
	reg, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("nap_bounded", "Sleeps five seconds.", nap),
		workflows.NewTool("nap_patient", "Sleeps five seconds.", nap, workflows.WithHandoffAfter(time.Minute)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := app.NewServer(app.ServerOptions{Registry: reg, Worker: true, MaxBlockingWait: time.Second, NoRunListTool: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := app.Start(ctx, remoteConfig(t, env), testenv.Logger(), srv.Parts())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	call := func(method string, params map[string]any) map[string]any {
		t.Helper()
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		req, _ := http.NewRequest(http.MethodPost, "http://"+a.HTTPAddr+"/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok {
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m struct {
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal(raw, &m); err != nil || m.Result == nil {
			t.Fatalf("%s: %d %s", method, resp.StatusCode, raw)
		}
		return m.Result
	}
	var names []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		names = names[:0]
		tools, _ := call("tools/list", map[string]any{})["tools"].([]any)
		for _, x := range tools {
			names = append(names, x.(map[string]any)["name"].(string))
		}
		if strings.Contains(strings.Join(names, ","), "nap_patient") || time.Now().After(deadline) {
			break
		}
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "nap_bounded") || !strings.Contains(got, "openwop_run_status") ||
		strings.Contains(got, "openwop_run_list") {
		t.Fatalf("tools/list = %s, want both tools and the companion tools but openwop_run_list", got)
	}
	contentOf := func(res map[string]any) string {
		raw, _ := json.Marshal(res["content"])
		return string(raw)
	}
	handed := call("tools/call", map[string]any{"name": "nap_bounded", "arguments": map[string]any{}})
	if !strings.Contains(contentOf(handed), "of nap_bounded is still working") {
		t.Fatalf("nap_bounded with the server's 1 s bound = %v, want a handoff", handed)
	}
	done := call("tools/call", map[string]any{"name": "nap_patient", "arguments": map[string]any{}})
	if done["isError"] == true || !strings.Contains(contentOf(done), "5s") {
		t.Fatalf("nap_patient with its own 1 min bound = %v, want its result", done)
	}
}
