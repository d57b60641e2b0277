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
)

// TestClientMatrixRefusedAnswer: the official 2026-07-28 Tasks client
// (@modelcontextprotocol/ext-tasks) answers confirm_delete's boolean
// question with a string (testdata/refused.mjs). The server refuses the
// tasks/update with -32602 naming the input and the rule, and the client's
// execution settles with that error; resumed from its serialized
// reference, the client is asked the same question again, answers true,
// and settles the completed task. Like TestClientMatrix, it runs only when
// OPENWOP_CLIENTS=1.
func TestClientMatrixRefusedAnswer(t *testing.T) {
	if os.Getenv(envClients) != "1" {
		t.Skip("set " + envClients + "=1 to run the client matrix (needs npm; installs the pinned clients)")
	}
	raw, line := runScript(t, "refused.mjs")
	var out struct {
		Refusal *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"refusal"`
		Asked   []string `json:"asked"`
		Status  string   `json:"status"`
		Text    string   `json:"text"`
		IsError bool     `json:"isError"`
		Error   string   `json:"error"`
	}
	if jerr := json.Unmarshal([]byte(line), &out); jerr != nil || out.Error != "" {
		t.Fatalf("refused.mjs: output %s (%v)", raw, jerr)
	}
	if out.Refusal == nil || out.Refusal.Code != -32602 || !strings.Contains(out.Refusal.Message, "inputResponses") ||
		!strings.Contains(out.Refusal.Message, "its type must be boolean") {
		t.Fatalf("the client's first settlement = %s, want the -32602 refusal naming the input and the rule", line)
	}
	if len(out.Asked) != 2 || out.Asked[0] != out.Asked[1] {
		t.Fatalf("questions asked %q, want the same one twice", out.Asked)
	}
	if out.Status != "completed" || out.IsError || out.Text != "Deleted matrix.txt." {
		t.Fatalf("after the fitting answer the client settled %s", line)
	}
}

// TestClientMatrixNotApprover: the official 2026-07-28 Tasks client answers
// a question whose approvers do not include it (testdata/notapprover.mjs).
// It saw, in the question's params._meta, that only the listed approver
// may answer and that it may not; the server refuses its tasks/update with
// -32602 naming the input and the rule, and the client's execution settles
// with that error instead of taking the answer as delivered. Like
// TestClientMatrix, it runs only when OPENWOP_CLIENTS=1.
func TestClientMatrixNotApprover(t *testing.T) {
	if os.Getenv(envClients) != "1" {
		t.Skip("set " + envClients + "=1 to run the client matrix (needs npm; installs the pinned clients)")
	}
	raw, line := runScript(t, "notapprover.mjs")
	var out struct {
		Refusal *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"refusal"`
		Answerers *struct {
			Approvers []string `json:"approvers"`
			CallerMay *bool    `json:"callerMay"`
		} `json:"answerers"`
		Asked int    `json:"asked"`
		Error string `json:"error"`
	}
	if jerr := json.Unmarshal([]byte(line), &out); jerr != nil || out.Error != "" {
		t.Fatalf("notapprover.mjs: output %s (%v)", raw, jerr)
	}
	if a := out.Answerers; a == nil || a.CallerMay == nil || *a.CallerMay ||
		len(a.Approvers) != 1 || a.Approvers[0] != "urn:conformance:listed-approver" {
		t.Fatalf("the question's answerers as the client saw them: %s", line)
	}
	if out.Refusal == nil || out.Refusal.Code != -32602 || !strings.Contains(out.Refusal.Message, "inputResponses") ||
		!strings.Contains(out.Refusal.Message, "only its approvers may") {
		t.Fatalf("the client's settlement = %s, want the -32602 refusal naming the input and the rule", line)
	}
}

// runScript runs testdata/name with the installed clients against a fresh
// server and returns its output and last line.
func runScript(t *testing.T, name string) (raw []byte, line string) {
	t.Helper()
	clients := installClients(t)
	script, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clients, name), script, 0o644); err != nil {
		t.Fatal(err)
	}
	url := startServer(t) + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(clients, "node_modules", "node", "bin", "node"), name, url)
	cmd.Dir = clients
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err = cmd.Output()
	line = strings.TrimSpace(string(raw))
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if err != nil {
		t.Fatalf("%s: %v; output %s; stderr:\n%s", name, err, raw, stderr.String())
	}
	return raw, line
}
