package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
)

// startStockServer starts the built stock server bin on its embedded
// Temporal, with no API keys and no UI, and returns its base URL and its
// Temporal port once it is healthy. env is added to its environment.
func startStockServer(t *testing.T, bin, dataDir string, env ...string) (base string, temporalPort int) {
	t.Helper()
	temporalPort, httpPort := testsupport.MustFreePort(t), testsupport.MustFreePort(t)
	start(t, "server", bin, append([]string{
		"OPENWOP_DATA_DIR=" + dataDir,
		fmt.Sprintf("OPENWOP_HTTP_ADDR=127.0.0.1:%d", httpPort),
		fmt.Sprintf("OPENWOP_TEMPORAL_PORT=%d", temporalPort),
		"OPENWOP_UI_PORT=off", "OPENWOP_LOG_FORMAT=json",
		"TEMPORAL_ADDRESS=", "TEMPORAL_PROFILE=", "TEMPORAL_CONFIG_FILE="}, env...)...)
	base = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	waitHealthy(t, base+"/healthz", 3*time.Minute)
	return base, temporalPort
}

// rest sends one REST request (body nil: none) and decodes its JSON
// answer into out, failing unless the status is want.
func rest(t *testing.T, method, url string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: HTTP %d %s, want %d", method, url, resp.StatusCode, raw, want)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s %s: undecodable answer %s: %v", method, url, raw, err)
	}
}

// restRun is the part of a REST RunSnapshot the test reads.
type restRun struct {
	RunID      string `json:"runId"`
	Status     string `json:"status"`
	StatusURL  string `json:"statusUrl"`
	Interrupts []struct {
		NodeID string `json:"nodeId"`
		Title  string `json:"title"`
	} `json:"interrupts"`
	Outputs struct {
		Tools []string `json:"tools"`
		Calls []struct {
			Tool   string `json:"tool"`
			Result string `json:"result"`
		} `json:"calls"`
	} `json:"outputs"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// waitRun reads the run at url until until holds (failing after a minute
// without it).
func waitRun(t *testing.T, url string, until func(restRun) bool) restRun {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var r restRun
		rest(t, http.MethodGet, url, nil, http.StatusOK, &r)
		if until(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s stuck in %s: %+v", url, r.Status, r)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestAgentExample runs examples/agent as its README says: the stock
// server, then the agent's worker, whose tool "agent" the server lists;
// a run of it started over REST lists the server's tools, calls delay
// (which completes) and publish_report, whose approval the agent's own
// run asks; answered there over REST, it reaches publish_report, and the
// agent completes with both results.
func TestAgentExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the commands")
	}
	root := moduleRoot(t)
	bin := t.TempDir()
	build(t, root, "cmd/server", filepath.Join(bin, "server"))
	build(t, root, "examples/agent", filepath.Join(bin, "agent"))
	base, temporalPort := startStockServer(t, filepath.Join(bin, "server"), filepath.Join(bin, "data"))
	start(t, "agent worker", filepath.Join(bin, "agent"),
		fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", temporalPort), "TEMPORAL_NAMESPACE=default",
		"OPENWOP_MCP_URL="+base+"/mcp")
	c := &client{url: base + "/mcp"}
	deadline := time.Now().Add(time.Minute)
	for !contains(c.toolNames(t), "agent") {
		if time.Now().After(deadline) {
			t.Fatal("the agent tool was not listed a minute after its worker started")
		}
		time.Sleep(250 * time.Millisecond)
	}

	var run restRun
	rest(t, http.MethodPost, base+"/runs", map[string]any{"workflowId": "agent",
		"inputs": map[string]any{"topic": "sales", "delayMs": 1500}}, http.StatusCreated, &run)
	asked := waitRun(t, run.StatusURL, func(r restRun) bool { return len(r.Interrupts) > 0 || isTerminal(r.Status) })
	if asked.Status != "waiting-input" || len(asked.Interrupts) != 1 || asked.Interrupts[0].NodeID != "publish_report" ||
		!strings.Contains(asked.Interrupts[0].Title, `Publish the report "Report on sales"?`) {
		t.Fatalf("the agent's run %+v, want it waiting for publish_report's approval", asked)
	}
	var resolved struct {
		Status string `json:"status"`
	}
	rest(t, http.MethodPost, run.StatusURL+"/interrupts/publish_report",
		map[string]any{"resumeValue": map[string]any{"action": "accept"}}, http.StatusOK, &resolved)
	done := waitRun(t, run.StatusURL, func(r restRun) bool { return isTerminal(r.Status) })
	if done.Status != "completed" {
		t.Fatalf("the agent's run ended %+v, want completed", done)
	}
	out := done.Outputs
	if !contains(out.Tools, "delay") || !contains(out.Tools, "publish_report") || len(out.Calls) != 2 {
		t.Fatalf("the agent's outputs %+v, want the tools it listed and its two calls", out)
	}
	if d := out.Calls[0]; d.Tool != "delay" || !strings.Contains(d.Result, `"sleptMs":1500`) {
		t.Errorf("delay answered the agent %+v, want it slept", d)
	}
	if p := out.Calls[1]; p.Tool != "publish_report" || !strings.Contains(p.Result, " published at ") {
		t.Errorf("publish_report answered the agent %+v, want the report published", p)
	}
}

// isTerminal reports whether a REST run status is one a run ends in.
func isTerminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}
