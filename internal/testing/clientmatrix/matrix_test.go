package clientmatrix

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
)

// Environment of TestClientMatrix.
const (
	// envClients enables the test ("1"); scripts/test.sh sets it.
	envClients = "OPENWOP_CLIENTS"
	// envCacheDir is where the pinned clients are installed (default: the
	// user cache directory), one directory per package-lock.json content.
	envCacheDir = "OPENWOP_CLIENTS_CACHE"
	// envDelayMs overrides the duration of the delay runs (default
	// longDelayMs), for a quick local run.
	envDelayMs = "OPENWOP_CLIENTS_DELAY_MS"
)

// longDelayMs is the delay run each client completes: longer than the 60 s
// default request timeout of the TypeScript clients.
const longDelayMs = 65_000

// shortDelayMs is the delay run of the cases that are about anything but
// the run's length.
const shortDelayMs = 3000

// maxNode bounds the Node.js clients running at once (2-core CI machines).
const maxNode = 5

// TestClientMatrix runs real MCP clients against cmd/server (embedded
// Temporal, fixture tools on) on a free port, concurrently:
//
//   - the official TypeScript client @modelcontextprotocol/client with
//     @modelcontextprotocol/ext-tasks (2026-07-28 Tasks): publish_report
//     approved, rejected and declined, a long delay, a failed tool read as
//     isError, a cancelled task; every message it receives must validate
//     against the extension's schemas;
//   - the TypeScript SDK v1 @modelcontextprotocol/sdk (2025-11-25 sessions):
//     publish_report approved by elicitation, a delay past its 60 s timeout
//     kept alive by progress, and through its experimental Tasks API an
//     approval, a failed tool and a cancelled task;
//   - the MCP Inspector: its CLI mode (a long delay, a failed tool) and its
//     connection CLI mcpdo, which answers the approval question and drives
//     a 2025-11-25 task by its id (tasks/get, tasks/list, tasks/result);
//   - a client shaped like VS Code's 2025-11-25 task flow
//     (testdata/vscode.mjs): publish_report approved through tasks/result,
//     a long delay;
//   - the go-sdk client in both protocol eras: publish_report approved, a
//     long delay, invalid arguments read as isError.
//
// The clients are pinned in testdata/package-lock.json and installed with
// npm ci into a cache directory, so it runs only when OPENWOP_CLIENTS=1
// (scripts/test.sh sets it; it needs npm).
func TestClientMatrix(t *testing.T) {
	if os.Getenv(envClients) != "1" {
		t.Skip("set " + envClients + "=1 to run the client matrix (needs npm; installs the pinned clients)")
	}
	delayMs := longDelayMs
	if v := os.Getenv(envDelayMs); v != "" {
		if _, err := fmt.Sscan(v, &delayMs); err != nil {
			t.Fatalf("%s: %v", envDelayMs, err)
		}
	}
	clients := installClients(t)
	// The long delay runs past the TypeScript clients' 60 s request
	// timeout, kept alive by progress, which only a deployment whose
	// handoff bound is above it allows (the default, 45 s, hands the call
	// over before any host gives up: docs/protocol.md, "Host limits and
	// the handoff"; mcpmount's TestHandoffBeforeHostLimit).
	url := startServerAt(t, testsupport.MustFreePort(t), "OPENWOP_MAX_BLOCKING_WAIT=3m") + "/mcp"
	nodeSlots := make(chan struct{}, maxNode)
	env := []string{fmt.Sprintf("CLIENTMATRIX_DELAY_MS=%d", delayMs)}
	node := func(t *testing.T, extraEnv []string, args ...string) ([]byte, error) {
		t.Helper()
		nodeSlots <- struct{}{}
		defer func() { <-nodeSlots }()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(clients, "node_modules", "node", "bin", "node"), args...)
		cmd.Dir = clients
		cmd.Env = append(append(os.Environ(), env...), extraEnv...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || t.Failed() {
			t.Logf("%s: %v; stderr:\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out, err
	}
	script := func(t *testing.T, name, which string) outcome {
		t.Helper()
		out, err := node(t, nil, name, url, which)
		return decodeOutcome(t, out, err)
	}
	slept := fmt.Sprintf(`{"sleptMs":%d}`, delayMs)
	shortSlept := fmt.Sprintf(`{"sleptMs":%d}`, shortDelayMs)

	// The long delay runs first: they set the suite's length.
	t.Run("ext-tasks", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			which  string
			status string
			want   []string
			isErr  bool
		}{
			{"delay", "completed", []string{slept}, false},
			{"approve", "completed", []string{"published at", "approved by"}, false},
			{"reject", "completed", []string{"was not published", `chose "reject"`}, false},
			{"decline", "completed", []string{"was not published"}, false},
			{"failed", "completed", []string{"failing_job failed on purpose"}, true}, // isError is completed in 2026-07-28
			{"cancel", "cancelled", nil, false},
		} {
			t.Run(tc.which, func(t *testing.T) {
				t.Parallel()
				o := script(t, "tasks.mjs", tc.which)
				o.want(t, tc.status, tc.isErr, tc.want...)
				if o.Kind != "task" {
					t.Errorf("execution kind %q, want task", o.Kind)
				}
				if len(o.Violations) > 0 {
					t.Errorf("messages that do not validate against the Tasks extension's schemas: %s", o.Violations)
				}
			})
		}
	})
	t.Run("sdk-v1", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			which  string
			status string
			want   []string
			isErr  bool
		}{
			{"delay", "completed", []string{slept}, false},
			{"approve", "completed", []string{"published at", "approved by"}, false},
			// The client validates structuredContent against the tool's
			// outputSchema.
			{"structured", "completed", []string{`{"sleptMs":0}`}, false},
			{"badargs", "completed", []string{"delayMs", "type"}, true},
			// Neither elicitation nor tasks: the companion tools.
			{"companion", "completed", []string{"published at", "approved by"}, false},
			{"task-approve", "completed", []string{"published at"}, false},
			{"task-failed", "failed", []string{"failing_job failed on purpose"}, true}, // isError is failed in 2025-11-25
			{"task-cancel", "cancelled", nil, false},
		} {
			t.Run(tc.which, func(t *testing.T) {
				t.Parallel()
				o := script(t, "v1.mjs", tc.which)
				o.want(t, tc.status, tc.isErr, tc.want...)
				if tc.which == "delay" && o.Progress == 0 {
					t.Error("no notifications/progress reached the client")
				}
				if tc.which == "structured" && (!o.OutputSchema || o.Annotations["readOnlyHint"] != true) {
					t.Errorf("the client listed delay with outputSchema %v and annotations %v, want both", o.OutputSchema, o.Annotations)
				}
			})
		}
	})
	t.Run("inspector", func(t *testing.T) {
		t.Parallel()
		inspector := filepath.Join("node_modules", "@modelcontextprotocol", "inspector")
		cli := func(t *testing.T, tool string, args ...string) toolResult {
			t.Helper()
			out, err := node(t, nil, append([]string{filepath.Join(inspector, "clients", "launcher", "build", "index.js"), "--cli", url,
				"--protocol-era", "modern", "--format", "json", "--method", "tools/call", "--tool-name", tool}, args...)...)
			var r struct {
				Result *toolResult `json:"result"`
			}
			if jerr := json.Unmarshal(out, &r); jerr != nil || r.Result == nil {
				t.Fatalf("inspector --cli tools/call %s: %v; output %s (%v)", tool, err, out, jerr)
			}
			return *r.Result
		}
		t.Run("cli/delay", func(t *testing.T) {
			t.Parallel()
			r := cli(t, "delay", "--tool-arg", fmt.Sprintf("delayMs=%d", delayMs))
			r.want(t, false, slept)
		})
		t.Run("cli/list", func(t *testing.T) {
			t.Parallel()
			out, err := node(t, nil, filepath.Join(inspector, "clients", "launcher", "build", "index.js"), "--cli", url,
				"--protocol-era", "modern", "--format", "json", "--method", "tools/list")
			var r struct {
				Result *struct {
					Tools []struct {
						Name         string         `json:"name"`
						OutputSchema map[string]any `json:"outputSchema"`
						Annotations  map[string]any `json:"annotations"`
					} `json:"tools"`
				} `json:"result"`
			}
			if jerr := json.Unmarshal(out, &r); jerr != nil || r.Result == nil {
				t.Fatalf("inspector --cli tools/list: %v; output %s (%v)", err, out, jerr)
			}
			for _, tl := range r.Result.Tools {
				if tl.Name == "publish_report" {
					if tl.Annotations["title"] != "Publish a report" || tl.Annotations["destructiveHint"] != false || tl.OutputSchema["type"] != "object" {
						t.Fatalf("the Inspector lists publish_report with annotations %v and outputSchema %v", tl.Annotations, tl.OutputSchema)
					}
					return
				}
			}
			t.Fatalf("the Inspector's tools/list lacks publish_report: %s", out)
		})
		t.Run("cli/failed", func(t *testing.T) {
			t.Parallel()
			r := cli(t, "failing_job")
			r.want(t, true, "failing_job failed on purpose")
		})
		// The --cli mode advertises no elicitation and cannot answer a
		// question (it exits without output when a task asks one); the
		// Inspector's connection CLI, mcpdo, answers it.
		for _, era := range []string{"modern", "legacy"} {
			t.Run("mcpdo/approve/"+era, func(t *testing.T) {
				t.Parallel()
				mcpdo := mcpdoRunner(t, node, filepath.Join(inspector, "clients", "mcpdo", "build", "mcp-bin.js"))
				if out, err := mcpdo("connect", "--era", era, url); err != nil {
					t.Fatalf("mcpdo connect: %v %s", err, out)
				}
				out, err := mcpdo("--connection", url, "tools/call", "publish_report", "title:=Matrix", "topic:=mcpdo "+era)
				var pending struct {
					ElicitationPending *struct {
						ElicitationID string `json:"elicitationId"`
						Message       string `json:"message"`
					} `json:"elicitationPending"`
				}
				if jerr := json.Unmarshal(out, &pending); jerr != nil || pending.ElicitationPending == nil {
					t.Fatalf("mcpdo tools/call publish_report: %v %s, want the approval question pending", err, out)
				}
				out, err = mcpdo("--connection", url, "elicitation/respond", pending.ElicitationPending.ElicitationID, "action:=accept")
				var r toolResult
				if jerr := json.Unmarshal(out, &r); jerr != nil {
					t.Fatalf("mcpdo elicitation/respond: %v %s", err, out)
				}
				r.want(t, false, "published at", "approved by")
			})
		}
		// The Tasks tab's operations, by task id, on a 2025-11-25 task: a
		// delay called with --task, then tasks/list, tasks/get and
		// tasks/result. The delay is short: the Inspector's long run is
		// cli/delay's, and a long one here would hold one of the few Node
		// slots the whole time. A legacy task that asks is not among them: the
		// Inspector 2.12.0 polls tasks/get while the task is
		// input_required and never calls tasks/result, which is where a
		// 2025-11-25 server asks (the call waits until its timeout, and an
		// mcpdo tasks/result on the task waits too without surfacing the
		// question); in the modern era it answers through tasks/update
		// (mcpdo/approve/modern above).
		t.Run("mcpdo/tasks/legacy", func(t *testing.T) {
			t.Parallel()
			mcpdo := mcpdoRunner(t, node, filepath.Join(inspector, "clients", "mcpdo", "build", "mcp-bin.js"))
			if out, err := mcpdo("connect", "--era", "legacy", url); err != nil {
				t.Fatalf("mcpdo connect: %v %s", err, out)
			}
			out, err := mcpdo("--connection", url, "tools/call", "--task", "delay", fmt.Sprintf("delayMs:=%d", shortDelayMs))
			var called struct {
				toolResult
				Meta map[string]struct {
					TaskID string `json:"taskId"`
				} `json:"_meta"`
			}
			if jerr := json.Unmarshal(out, &called); jerr != nil {
				t.Fatalf("mcpdo tools/call --task delay: %v %s", err, out)
			}
			called.want(t, false, shortSlept)
			taskID := called.Meta["io.modelcontextprotocol/related-task"].TaskID
			if taskID == "" {
				t.Fatalf("mcpdo tools/call --task delay: no related task in %s", out)
			}
			out, err = mcpdo("--connection", url, "tasks/get", taskID)
			var got struct {
				Task struct {
					TaskID string `json:"taskId"`
					Status string `json:"status"`
				} `json:"task"`
			}
			if jerr := json.Unmarshal(out, &got); jerr != nil || got.Task.TaskID != taskID || got.Task.Status != "completed" {
				t.Fatalf("mcpdo tasks/get %s: %v %s, want it completed", taskID, err, out)
			}
			// The list is eventually consistent with tasks/get: the
			// task is listed, in whichever status.
			out, err = mcpdo("--connection", url, "tasks/list")
			var list struct {
				Tasks []struct {
					TaskID string `json:"taskId"`
				} `json:"tasks"`
			}
			if jerr := json.Unmarshal(out, &list); jerr != nil || !slices.ContainsFunc(list.Tasks, func(t struct {
				TaskID string `json:"taskId"`
			}) bool {
				return t.TaskID == taskID
			}) {
				t.Fatalf("mcpdo tasks/list: %v %s, want task %s listed", err, out, taskID)
			}
			out, err = mcpdo("--connection", url, "tasks/result", taskID)
			var r toolResult
			if jerr := json.Unmarshal(out, &r); jerr != nil {
				t.Fatalf("mcpdo tasks/result %s: %v %s", taskID, err, out)
			}
			r.want(t, false, shortSlept)
		})
	})
	// A client that behaves as Claude Code does (testdata/hostlike.mjs): a
	// short tool is answered inline, a longer one is a task it polls at
	// the pollIntervalMs it is given, an approval is answered through
	// tasks/update.
	t.Run("host-like", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			which, kind string
			want        []string
		}{
			{"short", "complete", []string{`{"sleptMs":5}`}},
			{"long", "task", []string{`"host-like"`}},
			{"approve", "task", []string{"published at", "approved by"}},
		} {
			t.Run(tc.which, func(t *testing.T) {
				t.Parallel()
				o := script(t, "hostlike.mjs", tc.which)
				o.want(t, "completed", false, tc.want...)
				if o.Kind != tc.kind {
					t.Errorf("the call was answered %q, want %q", o.Kind, tc.kind)
				}
			})
		}
	})
	// A client shaped like VS Code's 2025-11-25 task flow
	// (testdata/vscode.mjs): support detected through
	// capabilities.tasks.requests.tools.call, tools/call with params.task,
	// tasks/get polled until the task asks or ends, then tasks/result, whose
	// stream carries the question as elicitation/create.
	t.Run("vscode", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			which, handedOver string
			want              []string
		}{
			{"long", "completed", []string{slept}},
			{"approve", "input_required", []string{"published at", "approved by"}},
		} {
			t.Run(tc.which, func(t *testing.T) {
				t.Parallel()
				o := script(t, "vscode.mjs", tc.which)
				o.want(t, "completed", false, tc.want...)
				if o.Kind != "task" || o.HandedOver != tc.handedOver {
					t.Errorf("the call was answered %q and handed to tasks/result at %q, want a task at %q", o.Kind, o.HandedOver, tc.handedOver)
				}
				if tc.which == "approve" && !strings.Contains(o.Asked, "Publish the report") {
					t.Errorf("asked %q, want the approval question through tasks/result", o.Asked)
				}
			})
		}
	})
	t.Run("go-sdk", func(t *testing.T) {
		t.Parallel()
		for _, version := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(version, func(t *testing.T) {
				t.Parallel()
				goSDKClient(t, url, version, delayMs)
			})
		}
	})
}

// outcome is what a client script printed: the outcome as the client's own
// API reported it.
type outcome struct {
	Case     string `json:"case"`
	Kind     string `json:"kind"`
	Status   string `json:"status"`
	IsError  bool   `json:"isError"`
	Text     string `json:"text"`
	Asked    string `json:"asked"`
	Progress int    `json:"progress"`
	// HandedOver is the task status at which the VS Code-shaped client
	// called tasks/result.
	HandedOver string `json:"handedOver"`
	// OutputSchema and Annotations are what the client listed of the
	// tool it called ("structured").
	OutputSchema bool            `json:"outputSchema"`
	Annotations  map[string]any  `json:"annotations"`
	Error        string          `json:"error"`
	Violations   json.RawMessage `json:"violations"`
}

func decodeOutcome(t *testing.T, out []byte, err error) outcome {
	t.Helper()
	var o outcome
	line := bytes.TrimSpace(out)
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if jerr := json.Unmarshal(line, &o); jerr != nil {
		t.Fatalf("client script: %v; output %q (%v)", err, out, jerr)
	}
	if string(o.Violations) == "[]" || string(o.Violations) == "null" {
		o.Violations = nil
	}
	return o
}

// want fails unless the outcome has the status, isError and a text holding
// every one of texts.
func (o outcome) want(t *testing.T, status string, isError bool, texts ...string) {
	t.Helper()
	if o.Error != "" {
		t.Fatalf("%s: client error %s", o.Case, o.Error)
	}
	if o.Status != status || o.IsError != isError {
		t.Fatalf("%s: status %q isError %v (text %q), want %q isError %v", o.Case, o.Status, o.IsError, o.Text, status, isError)
	}
	for _, s := range texts {
		if !strings.Contains(o.Text, s) {
			t.Errorf("%s: text %q does not contain %q", o.Case, o.Text, s)
		}
	}
}

// toolResult is a CallToolResult as a client printed it.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r toolResult) want(t *testing.T, isError bool, texts ...string) {
	t.Helper()
	var text strings.Builder
	for _, c := range r.Content {
		text.WriteString(c.Text)
	}
	if r.IsError != isError {
		t.Fatalf("isError %v (text %q), want %v", r.IsError, text.String(), isError)
	}
	for _, s := range texts {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text %q does not contain %q", text.String(), s)
		}
	}
}

// mcpdoRunner runs the Inspector's connection CLI with a private daemon (its
// own state directory and token), stopped when the test ends.
func mcpdoRunner(t *testing.T, node func(*testing.T, []string, ...string) ([]byte, error), bin string) func(args ...string) ([]byte, error) {
	t.Helper()
	home := t.TempDir()
	daemon, err := os.MkdirTemp("", "mcpdo") // short: the daemon's socket lives here
	if err != nil {
		t.Fatal(err)
	}
	token := make([]byte, 24)
	_, _ = rand.Read(token)
	env := []string{"HOME=" + home, "MCP_CATALOG_PATH=" + filepath.Join(home, "mcp.json"),
		"MCP_INSPECTOR_DAEMON_DIR=" + daemon, "MCP_INSPECTOR_DAEMON_TOKEN=" + hex.EncodeToString(token)}
	run := func(args ...string) ([]byte, error) {
		return node(t, env, append([]string{bin, "--format", "json"}, args...)...)
	}
	t.Cleanup(func() {
		_, _ = run("daemon", "stop")
		_ = os.RemoveAll(daemon)
	})
	return run
}

// installClients installs the clients pinned in testdata (package.json and
// package-lock.json) with npm ci, once per lock file content, into the cache
// directory, and returns a directory holding the client scripts next to
// the installed node_modules.
func installClients(t *testing.T) string {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join("testdata", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join("testdata", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte{}, manifest...), lock...))
	cache := os.Getenv(envCacheDir)
	if cache == "" {
		if cache, err = os.UserCacheDir(); err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(cache, "openwop-clientmatrix")
	}
	dir := filepath.Join(cache, hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, ".installed")); err != nil {
		tmp := fmt.Sprintf("%s.tmp-%d", dir, os.Getpid())
		_ = os.RemoveAll(tmp)
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{"package.json": manifest, "package-lock.json": lock} {
			if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		began := time.Now()
		// The one install script needed is the node package's, which
		// fetches the binary for this platform (package.json allowScripts).
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = tmp
		if out, err := cmd.CombinedOutput(); err != nil {
			_ = os.RemoveAll(tmp)
			t.Fatalf("npm ci in %s: %v\n%s", tmp, err, out)
		}
		if _, err := os.Stat(filepath.Join(tmp, "node_modules", "node", "bin", "node")); err != nil {
			_ = os.RemoveAll(tmp)
			t.Fatalf("npm ci installed no Node.js binary: %v", err)
		}
		if err := os.WriteFile(filepath.Join(tmp, ".installed"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			_ = os.RemoveAll(tmp) // another run installed it first
			if _, serr := os.Stat(filepath.Join(dir, ".installed")); serr != nil {
				t.Fatalf("install the clients into %s: %v", dir, err)
			}
		}
		t.Logf("installed the pinned clients into %s in %v", dir, time.Since(began).Round(time.Second))
	}
	// The scripts run from a directory of their own whose node_modules is
	// the installed one.
	work := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"package.json", "dispatch.mjs", "tasks.mjs", "v1.mjs", "oauth.mjs", "hostlike.mjs", "vscode.mjs", "inspectorweb.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

// startServer builds cmd/server and runs it with the fixture tools on a
// free port (embedded Temporal on another, no UI) until the test ends; it
// returns the base URL once /healthz answers 200.
func startServer(t *testing.T) string {
	t.Helper()
	return startServerAt(t, testsupport.MustFreePort(t))
}

// startServerAt is startServer on the port, with extra environment
// variables (name=value) after the defaults.
func startServerAt(t *testing.T, port int, extraEnv ...string) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "server")
	build := exec.Command("go", "build", "-o", bin, "./cmd/server")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/server: %v\n%s", err, out)
	}
	var logs lockedBuffer
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"OPENWOP_DATA_DIR="+filepath.Join(t.TempDir(), "data"),
		fmt.Sprintf("OPENWOP_HTTP_ADDR=127.0.0.1:%d", port),
		"OPENWOP_TEMPORAL_PORT=0", "OPENWOP_UI_PORT=off", "OPENWOP_FIXTURES=on", "OPENWOP_LOG_FORMAT=json",
		"OPENWOP_API_KEYS=", "OPENWOP_API_KEYS_FILE=",
		"TEMPORAL_ADDRESS=", "TEMPORAL_PROFILE=", "TEMPORAL_CONFIG_FILE=")
	cmd.Env = append(cmd.Env, extraEnv...)
	exited, waitErr := startLogged(t, cmd, &logs, 30*time.Second, "server output")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-exited:
			t.Fatalf("the server exited: %v\n%s", waitErr(), logs.String())
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/healthz not 200 within 3 minutes\n%s", base, logs.String())
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startLogged starts cmd with its output in logs and, when the test ends,
// stops it (SIGTERM, then a kill after grace) and logs the output, headed
// what, if the test failed. exited is closed when cmd has ended, and
// waitErr then returns how it ended.
func startLogged(t *testing.T, cmd *exec.Cmd, logs *lockedBuffer, grace time.Duration, what string) (exited <-chan struct{}, waitErr func() error) {
	t.Helper()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var err error
	go func() { err = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s:\n%s", what, logs.String())
		}
	})
	return done, func() error { <-done; return err }
}
