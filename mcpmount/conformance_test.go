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

// conformanceScenarios are the scenarios CI runs: every Tasks extension
// scenario and every other server scenario that applies to a server whose
// only feature is tools (excludedScenarios lists the rest, with the reason).
var conformanceScenarios = []string{
	// The Tasks extension.
	"tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
	"tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-required-task-error",
	"tasks-mrtr-composition", "tasks-status-notifications",
	// 2026-07-28 core.
	"server-stateless", "tools-list", "dns-rebinding-protection", "caching", "http-header-validation",
	"input-required-result-unsupported-methods", "input-required-result-validate-input",
	// The session-dialect protocol on the same endpoint.
	"server-initialize", "server-session-lifecycle", "ping", "logging-set-level", "server-sse-multiple-streams",
}

// excludedScenarios are the server scenarios of the suite CI does not run,
// and why: each needs a feature this server does not have (prompts,
// the reference server's resources, completion, skills) or a diagnostic tool of the reference
// "everything" server, which a server of Temporal workflows has no reason
// to serve.
var excludedScenarios = map[string]string{
	"completion-complete":                           "needs completion/complete (prompts or resource templates)",
	"tools-call-simple-text":                        "needs the test tool test_simple_text",
	"tools-call-image":                              "needs the test tool test_image_content",
	"tools-call-audio":                              "needs the test tool test_audio_content",
	"tools-call-embedded-resource":                  "needs the test tool test_embedded_resource (and resources)",
	"tools-call-mixed-content":                      "needs the test tool test_multiple_content_types",
	"tools-call-with-logging":                       "needs the test tool test_tool_with_logging",
	"tools-call-error":                              "needs the test tool test_error_handling",
	"tools-call-with-progress":                      "needs the test tool test_tool_with_progress",
	"tools-call-sampling":                           "needs the test tool test_sampling",
	"tools-call-elicitation":                        "needs the test tool test_elicitation",
	"json-schema-2020-12":                           "needs the test tool json_schema_2020_12_tool",
	"elicitation-sep1034-defaults":                  "needs the test tool test_elicitation_sep1034_defaults",
	"elicitation-sep1330-enums":                     "needs the test tool test_elicitation_sep1330_enums",
	"server-sse-polling":                            "needs the test tool test_reconnection",
	"resources-list":                                "needs resources",
	"resources-read-text":                           "needs resources",
	"resources-read-binary":                         "needs resources",
	"resources-templates-read":                      "needs resource templates",
	"resources-subscribe":                           "needs resources",
	"resources-unsubscribe":                         "needs resources",
	"sep-2164-resource-not-found":                   "needs resources",
	"sep-2640-skills-directory":                     "needs the skills extension (resources)",
	"sep-2640-skills-enumeration":                   "needs the skills extension (resources)",
	"sep-2640-skills-manifest":                      "needs the skills extension (resources)",
	"prompts-list":                                  "needs prompts",
	"prompts-get-simple":                            "needs prompts",
	"prompts-get-with-args":                         "needs prompts",
	"prompts-get-embedded-resource":                 "needs prompts",
	"prompts-get-with-image":                        "needs prompts",
	"http-custom-header-server-validation":          "needs a tool whose inputSchema has x-mcp-header annotations",
	"input-required-result-basic-elicitation":       "needs the test tool test_input_required_result_elicitation",
	"input-required-result-basic-sampling":          "needs the test tool test_input_required_result_sampling",
	"input-required-result-basic-list-roots":        "needs the test tool test_input_required_result_list_roots",
	"input-required-result-request-state":           "needs the test tool test_input_required_result_request_state",
	"input-required-result-multiple-input-requests": "needs the test tool test_input_required_result_multiple_inputs",
	"input-required-result-multi-round":             "needs the test tool test_input_required_result_multi_round",
	"input-required-result-missing-input-response":  "needs the test tool test_input_required_result_elicitation",
	"input-required-result-non-tool-request":        "needs prompts (an InputRequiredResult to prompts/get)",
	"input-required-result-result-type":             "needs the test tool test_input_required_result_elicitation",
	"input-required-result-tampered-state":          "needs the test tool test_input_required_result_request_state",
	"input-required-result-capability-check":        "needs the test tool test_input_required_result_capabilities",
	"input-required-result-ignore-extra-params":     "needs the test tool test_input_required_result_elicitation",
}

// excludedChecks are checks that need prompts, resources or the reference
// "everything" server's diagnostic tools, which this server does not have.
var excludedChecks = map[string]string{
	"sep-2575-server-rejects-undeclared-capability":          "needs the diagnostic tool test_missing_capability",
	"sep-2575-missing-capability-http-400":                   "needs the diagnostic tool test_missing_capability",
	"sep-2575-http-server-no-independent-requests-on-stream": "needs the diagnostic tool test_streaming_elicitation",
	"sep-2575-server-no-log-without-loglevel":                "needs the diagnostic tool test_logging_tool",
	"sep-2549-prompts-list-caching-hints":                    "needs prompts (this server has none)",
	"sep-2549-resources-list-caching-hints":                  "needs resources of the reference server (this server's are runs' results)",
	"sep-2549-resources-templates-list-caching-hints":        "needs resources of the reference server (this server's are runs' results)",
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
	t.Run("every scenario classified", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		args := append(strings.Fields(cmdline), "list", "--server")
		out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		listed := serverScenarios(out)
		if len(listed) == 0 {
			t.Fatalf("no server scenarios in:\n%s", out)
		}
		run := map[string]bool{}
		for _, sc := range conformanceScenarios {
			run[sc] = true
		}
		for _, sc := range listed {
			if why, ok := excludedScenarios[sc]; ok {
				t.Logf("excluded %s: %s", sc, why)
			} else if !run[sc] {
				t.Errorf("scenario %s is neither run nor excluded with a reason", sc)
			}
		}
	})
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

// serverScenarios reads the scenario names of "conformance list --server"
// ("  - name [versions]" lines).
func serverScenarios(out []byte) []string {
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			continue
		}
		if name, _, _ := strings.Cut(rest, " "); name != "" {
			names = append(names, name)
		}
	}
	return names
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
