package clientmatrix

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
)

// chromiumPath is Debian's Chromium, which scripts/test.sh installs.
const chromiumPath = "/usr/bin/chromium"

// webOutcome is what testdata/inspectorweb.mjs printed: what the Inspector's
// web client showed.
type webOutcome struct {
	Case string `json:"case"`
	Kind string `json:"kind"`
	// Protocol is the version the server's card showed once connected.
	Protocol string `json:"protocol"`
	// Tools is the count the Tools screen listed.
	Tools int `json:"tools"`
	// TaskID is the id of the call's task in the Tasks tab; SawStatuses
	// the statuses its card showed, in order.
	TaskID      string   `json:"taskId"`
	SawStatuses []string `json:"sawStatuses"`
	// TaskObject is the card's "Full Task Object", copied; Raw is the
	// task as the server last sent it.
	TaskObject struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
		Raw    struct {
			Status string `json:"status"`
			Result *struct {
				toolResult
				StructuredContent map[string]any `json:"structuredContent"`
			} `json:"result"`
		} `json:"raw"`
	} `json:"taskObject"`
	Status string `json:"status"`
	// Text is the Results panel's text; Asked the elicitation dialog's.
	Text  string `json:"text"`
	Asked string `json:"asked"`
	Error string `json:"error"`
	// Page is the page's text when the script failed.
	Page string `json:"page"`
}

// TestInspectorWeb drives the MCP Inspector's web client (pinned with the
// client matrix) in headless Chromium through Playwright
// (testdata/inspectorweb.mjs), as a person would, against cmd/server:
//
//   - 2026-07-28: a 3 s delay the server answers with a task, followed in
//     the Tasks tab by its id (searched for) from working to completed,
//     with its result in the task and in the Results panel;
//   - 2026-07-28: publish_report, whose approval question the client shows
//     in its elicitation dialog, answered "accept" (tasks/update);
//   - 2025-11-25: publish_report run as a task ("Run as task"): the task
//     reaches input_required in the Tasks tab, but the Inspector 2.12.0
//     polls tasks/get and never calls tasks/result, where a 2025-11-25
//     server asks, so it shows no question; the task is cancelled from its
//     card instead, and listed cancelled once the client connects anew.
//
// It needs Debian's chromium besides npm, and runs only with
// OPENWOP_CLIENTS=1 (scripts/test.sh installs chromium and sets it).
func TestInspectorWeb(t *testing.T) {
	if os.Getenv(envClients) != "1" {
		t.Skip("set " + envClients + "=1 to run the client matrix (needs npm and chromium)")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("headless Chromium: %v (install Debian's chromium package; scripts/test.sh does)", err)
	}
	clients := installClients(t)
	mcpURL := startServer(t) + "/mcp"
	inspectorURL := startInspectorWeb(t, clients, mcpURL)
	for _, tc := range []struct {
		which, protocol string
		statuses        []string
		check           func(*testing.T, webOutcome)
	}{
		{"delay", "MCP 2026-07-28", []string{"working", "completed"}, func(t *testing.T, o webOutcome) {
			r := o.TaskObject.Raw.Result
			if r == nil || r.StructuredContent["sleptMs"] != float64(shortDelayMs) {
				t.Fatalf("the task object's result is %+v, want sleptMs %d", r, shortDelayMs)
			}
			r.want(t, false, fmt.Sprintf(`{"sleptMs":%d}`, shortDelayMs))
			if want := fmt.Sprintf(`"sleptMs": %d`, shortDelayMs); !strings.Contains(o.Text, want) {
				t.Errorf("the Results panel shows %q, want %s", o.Text, want)
			}
		}},
		{"approve", "MCP 2026-07-28", []string{"input required", "completed"}, func(t *testing.T, o webOutcome) {
			if !strings.Contains(o.Asked, `Publish the report "Inspector web"?`) {
				t.Errorf("the elicitation dialog shows %q, want the approval question", o.Asked)
			}
			r := o.TaskObject.Raw.Result
			if r == nil || r.StructuredContent["decision"] != "accept" {
				t.Fatalf("the task object's result is %+v, want the report accepted", r)
			}
			r.want(t, false, "published at", "approved by")
			if !strings.Contains(o.Text, "published at") {
				t.Errorf("the Results panel shows %q, want the report published", o.Text)
			}
		}},
		{"legacy", "MCP 2025-11-25", []string{"input required", "cancelled", "cancelled"}, func(t *testing.T, o webOutcome) {
			if o.Asked != "" {
				t.Errorf("the Inspector now shows a 2025-11-25 task's question (%q): answer it here and update docs/testing.md", o.Asked)
			} else {
				t.Log("2025-11-25: the Inspector 2.12.0 shows no question for an input_required task (it polls tasks/get and never calls tasks/result, where the server asks); the task was cancelled from its card instead")
			}
			if o.TaskObject.Raw.Status != "cancelled" {
				t.Errorf("after reconnecting, the server lists the task %q, want cancelled", o.TaskObject.Raw.Status)
			}
		}},
	} {
		t.Run(tc.which, func(t *testing.T) {
			o := runInspectorWeb(t, clients, inspectorURL, tc.which)
			if o.Protocol != tc.protocol || o.Tools == 0 || o.Kind != "task" || o.TaskID == "" || o.TaskObject.TaskID != o.TaskID {
				t.Fatalf("connected with %q, %d tools listed, kind %q, task %q (task object's %q); want %s, tools, a task by its id",
					o.Protocol, o.Tools, o.Kind, o.TaskID, o.TaskObject.TaskID, tc.protocol)
			}
			if !slices.Equal(o.SawStatuses, tc.statuses) || o.Status != tc.statuses[len(tc.statuses)-1] {
				t.Fatalf("the task's card showed %q, then status %q; want %q", o.SawStatuses, o.Status, tc.statuses)
			}
			tc.check(t, o)
		})
	}
}

// runInspectorWeb runs testdata/inspectorweb.mjs for the case and decodes its
// outcome; on failure it logs the page's text and its screenshot (kept in a
// temporary directory, and as a data URL).
func runInspectorWeb(t *testing.T, clients, inspectorURL, which string) webOutcome {
	t.Helper()
	shots, err := os.MkdirTemp("", "inspectorweb-")
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shots, which+".jpg")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(clients, "node_modules", "node", "bin", "node"),
		"inspectorweb.mjs", inspectorURL, chromiumPath, shot, which)
	cmd.Dir = clients
	cmd.Env = append(os.Environ(), fmt.Sprintf("CLIENTMATRIX_DELAY_MS=%d", shortDelayMs))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var o webOutcome
	line := bytes.TrimSpace(out)
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	jerr := json.Unmarshal(line, &o)
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(shots)
			return
		}
		t.Logf("inspectorweb.mjs %s: %v; stderr:\n%s", which, err, stderr.Bytes())
		if o.Page != "" {
			t.Logf("the page's text:\n%s", o.Page)
		}
		if b, rerr := os.ReadFile(shot); rerr == nil {
			t.Logf("the page's screenshot, %s:\ndata:image/jpeg;base64,%s", shot, base64.StdEncoding.EncodeToString(b))
		}
	})
	if jerr != nil {
		t.Fatalf("inspectorweb.mjs %s: %v; output %q (%v)", which, err, out, jerr)
	}
	if o.Error != "" {
		t.Fatalf("inspectorweb.mjs %s: %s", which, o.Error)
	}
	return o
}

// startInspectorWeb starts the Inspector's web client from the installed
// package on a free port (its MCP Apps sandbox and app origin on ports the
// system picks), serving a read-only server list: the server at mcpURL as
// "openwop-modern" (2026-07-28) and "openwop-legacy" (2025-11-25). It
// returns the URL a person opens, with the session token the client's API
// requires; the client stops when the test ends.
func startInspectorWeb(t *testing.T, clients, mcpURL string) string {
	t.Helper()
	dir := t.TempDir()
	config, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"openwop-modern": map[string]string{"type": "streamable-http", "url": mcpURL, "protocolEra": "modern"},
		"openwop-legacy": map[string]string{"type": "streamable-http", "url": mcpURL, "protocolEra": "legacy"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "servers.json"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	token := make([]byte, 16)
	_, _ = rand.Read(token)
	port := testsupport.MustFreePort(t)
	var logs lockedBuffer
	cmd := exec.Command(filepath.Join(clients, "node_modules", "node", "bin", "node"),
		filepath.Join("node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js"),
		"--web", "--config", filepath.Join(dir, "servers.json"))
	cmd.Dir = clients
	cmd.Env = append(os.Environ(), "HOME="+dir, "MCP_STORAGE_DIR="+filepath.Join(dir, "storage"),
		"HOST=127.0.0.1", fmt.Sprintf("CLIENT_PORT=%d", port), "MCP_SANDBOX_PORT=0", "MCP_APP_ORIGIN_PORT=0",
		"MCP_AUTO_OPEN_ENABLED=false", "MCP_INSPECTOR_SECRET_STORE=memory",
		"MCP_INSPECTOR_API_TOKEN="+hex.EncodeToString(token))
	exited, waitErr := startLogged(t, cmd, &logs, 10*time.Second, "the Inspector's output")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(time.Minute); ; {
		if resp, err := http.Get(base + "/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base + "/?MCP_INSPECTOR_API_TOKEN=" + hex.EncodeToString(token)
			}
		}
		select {
		case <-exited:
			t.Fatalf("the Inspector's web client exited: %v\n%s", waitErr(), logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Inspector's web client did not answer on %s within a minute\n%s", base, logs.String())
		}
	}
}
