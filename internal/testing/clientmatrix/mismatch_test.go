package clientmatrix

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
)

// mismatchTools declares delay_mismatch: the example delay workflow on the
// server's own task queue, declared with an output schema its result
// ({"sleptMs": n}) does not match.
const mismatchTools = `[{"name":"delay_mismatch","description":"delay, declared with an output schema it does not meet",
 "inputSchema":{"type":"object","properties":{"delayMs":{"type":"integer"}},"required":["delayMs"]},
 "outputSchema":{"type":"object","properties":{"other":{"type":"string"}},"required":["other"]},
 "taskSupport":"optional","canSuspend":false,"taskQueue":"openwop-tools","workflowType":"delay","contract":"openwop"}]`

// TestClientMatrixOutputSchemaMismatch: the TypeScript SDK v1 client
// validates structuredContent against a tool's outputSchema (the
// "structured" case of TestClientMatrix shows a matching one accepted).
// A run whose result does not match is never sent to it as
// structuredContent: the server answers it as a tool error without
// structuredContent naming the output schema, which the client accepts
// (testdata/mismatch.mjs). Like TestClientMatrix, it runs only when
// OPENWOP_CLIENTS=1.
func TestClientMatrixOutputSchemaMismatch(t *testing.T) {
	if os.Getenv(envClients) != "1" {
		t.Skip("set " + envClients + "=1 to run the client matrix (needs npm; installs the pinned clients)")
	}
	clients := installClients(t)
	script, err := os.ReadFile(filepath.Join("testdata", "mismatch.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clients, "mismatch.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	toolsFile := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(toolsFile, []byte(mismatchTools), 0o644); err != nil {
		t.Fatal(err)
	}
	url := startServerAt(t, testsupport.MustFreePort(t), "OPENWOP_TOOLS_FILE="+toolsFile, "OPENWOP_TASK_QUEUE=openwop-tools") + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(clients, "node_modules", "node", "bin", "node"), "mismatch.mjs", url)
	cmd.Dir = clients
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	var out struct {
		OutputSchema bool   `json:"outputSchema"`
		IsError      bool   `json:"isError"`
		Structured   bool   `json:"structured"`
		Text         string `json:"text"`
		Error        string `json:"error"`
	}
	line := strings.TrimSpace(string(raw))
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if jerr := json.Unmarshal([]byte(line), &out); jerr != nil || out.Error != "" {
		t.Fatalf("mismatch.mjs: %v; output %s (%v); stderr:\n%s", err, raw, jerr, stderr.String())
	}
	if !out.OutputSchema || !out.IsError || out.Structured || !strings.Contains(out.Text, "output schema") {
		t.Fatalf("the client got %s, want delay_mismatch listed with its outputSchema and answered a tool error naming the output schema, without structuredContent", line)
	}
}
