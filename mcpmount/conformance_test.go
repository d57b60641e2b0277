package mcpmount

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Environment of TestConformance.
const (
	// envConformance enables the test: "1" runs the suite, "serve" only
	// serves the stack (at envConformanceAddr) until interrupted.
	envConformance = "OPENWOP_CONFORMANCE"
	// envConformanceAddr is the listen address (default 127.0.0.1:0).
	envConformanceAddr = "OPENWOP_CONFORMANCE_ADDR"
	// envConformanceCmd is the conformance CLI command line (default: npx
	// with node 22 and @modelcontextprotocol/conformance@0.2.0-alpha.12).
	envConformanceCmd = "OPENWOP_CONFORMANCE_CMD"
	// envConformanceScenarios overrides the scenario list (comma-separated).
	envConformanceScenarios = "OPENWOP_CONFORMANCE_SCENARIOS"
)

const defaultConformanceCmd = "npx -y -p node@22 -p @modelcontextprotocol/conformance@0.2.0-alpha.12 -- conformance"

// conformanceScenarios are the scenarios CI runs: the nine scored tasks
// scenarios and four core ones.
var conformanceScenarios = []string{
	"tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
	"tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-required-task-error",
	"tasks-mrtr-composition",
	"server-stateless", "tools-list", "dns-rebinding-protection", "caching",
}

// excludedChecks are checks that need prompts, resources or the reference
// "everything" server's diagnostic tools, which this server does not have.
var excludedChecks = map[string]string{
	"sep-2575-server-rejects-undeclared-capability":          "needs the diagnostic tool test_missing_capability",
	"sep-2575-missing-capability-http-400":                   "needs the diagnostic tool test_missing_capability",
	"sep-2575-http-server-no-independent-requests-on-stream": "needs the diagnostic tool test_streaming_elicitation",
	"sep-2575-server-no-log-without-loglevel":                "needs the diagnostic tool test_logging_tool",
	"sep-2549-prompts-list-caching-hints":                    "needs prompts (this server has none)",
	"sep-2549-resources-list-caching-hints":                  "needs resources (this server has none)",
	"sep-2549-resources-templates-list-caching-hints":        "needs resources (this server has none)",
}

// TestConformance runs the official MCP conformance suite against the whole
// stack on the embedded Temporal server. It needs the conformance CLI (node
// 22), so it runs only when OPENWOP_CONFORMANCE is set.
func TestConformance(t *testing.T) {
	mode := os.Getenv(envConformance)
	if mode == "" || mode == "0" {
		t.Skip("set " + envConformance + "=1 to run the MCP conformance suite (needs npx and node 22)")
	}
	addr := os.Getenv(envConformanceAddr)
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s := newStack(t, nil, addr)
	url := s.URL + "/mcp"
	if mode == "serve" {
		t.Logf("serving MCP at %s; interrupt to stop", url)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		<-ctx.Done()
		return
	}
	cmdline := os.Getenv(envConformanceCmd)
	if cmdline == "" {
		cmdline = defaultConformanceCmd
	}
	scenarios := conformanceScenarios
	if v := os.Getenv(envConformanceScenarios); v != "" {
		scenarios = strings.Split(v, ",")
	}
	for _, sc := range scenarios {
		t.Run(sc, func(t *testing.T) {
			out := t.TempDir()
			args := append(strings.Fields(cmdline), "server", "--url", url, "--scenario", sc, "-o", out)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			output, err := cmd.CombinedOutput()
			checks := readChecks(t, out)
			if len(checks) == 0 {
				t.Fatalf("no checks recorded (err %v); output:\n%s", err, output)
			}
			failed := 0
			for _, c := range checks {
				switch c.Status {
				case "FAILURE", "WARNING":
					if why, ok := excludedChecks[c.ID]; ok {
						t.Logf("excluded %s (%s): %s", c.ID, why, c.Status)
						continue
					}
					failed++
					t.Errorf("%s: %s: %s", c.ID, c.Status, c.ErrorMessage)
				default:
					t.Logf("%s: %s", c.ID, c.Status)
				}
			}
			if failed > 0 {
				t.Logf("conformance output:\n%s", output)
			}
		})
	}
}

type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// readChecks reads every checks.json the CLI wrote under dir.
func readChecks(t *testing.T, dir string) []check {
	t.Helper()
	var all []check
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("read %s: %v", path, err)
			return nil
		}
		var cs []check
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Errorf("decode %s: %v", path, err)
			return nil
		}
		all = append(all, cs...)
		return nil
	})
	return all
}
