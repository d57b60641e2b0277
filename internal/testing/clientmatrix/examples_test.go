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

// TestClientMatrixExamples runs the client examples of docs/clients.md
// (examples/clients/gotasks on net/http, examples/clients/typescript on the
// official SDK with ext-tasks, run by the pinned Node.js from the client
// install) against cmd/server with an API key, each given the key in
// OPENWOP_API_KEY: each must exit 0 having printed, in order, the task of
// publish_report, its question, the -32602 refusal of the answer off the
// question, the published report after the fitting answer, and delay
// cancelled. The TypeScript example's package.json must pin the versions
// the matrix installs. Like TestClientMatrix, it runs only when
// OPENWOP_CLIENTS=1.
func TestClientMatrixExamples(t *testing.T) {
	if os.Getenv(envClients) != "1" {
		t.Skip("set " + envClients + "=1 to run the client matrix (needs npm; installs the pinned clients)")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ts := filepath.Join(root, "examples", "clients", "typescript")
	checkPins(t, filepath.Join(ts, "package.json"), filepath.Join("testdata", "package.json"))
	clients := installClients(t)
	script, err := os.ReadFile(filepath.Join(ts, "client.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clients, "client.ts"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	goClient := filepath.Join(t.TempDir(), "client")
	build := exec.Command("go", "build", "-o", goClient, "./examples/clients/gotasks")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/clients/gotasks: %v\n%s", err, out)
	}
	const key = "key-examples"
	url := startServerAt(t, testsupport.MustFreePort(t), "OPENWOP_API_KEYS="+key+"=acme:urn:user:alice") + "/mcp"

	for _, tc := range []struct {
		name string
		cmd  []string
		dir  string
	}{
		{"go", []string{goClient, url}, root},
		{"typescript", []string{filepath.Join(clients, "node_modules", "node", "bin", "node"), "client.ts", url}, clients},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, tc.cmd[0], tc.cmd[1:]...)
			cmd.Dir = tc.dir
			cmd.Env = append(os.Environ(), "OPENWOP_API_KEY="+key)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", tc.name, err, out)
			}
			rest := string(out)
			for _, want := range []string{
				"called publish_report: task acme~2F",
				`asked: Publish the report "Q3"?`, "answering maybe",
				`refused: -32602 inputResponses["acme/`, `"maybe"`, // the refusal names the question and the answer
				`asked: Publish the report "Q3"?`, "answering accept",
				"completed: Report ", " published at ", "(approved by urn:user:alice)",
				"delay ended cancelled",
			} {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("the output lacks %q after what came before it:\n%s", want, out)
				}
				rest = rest[i+len(want):]
			}
		})
	}
}

// checkPins fails unless every dependency of the example's package.json is
// pinned to the version the matrix's package.json pins.
func checkPins(t *testing.T, example, matrix string) {
	t.Helper()
	deps := func(path string) map[string]string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Dependencies map[string]string }
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return m.Dependencies
	}
	pinned := deps(matrix)
	for name, version := range deps(example) {
		if pinned[name] != version {
			t.Errorf("%s pins %s %s; the client matrix installs %q (%s)", example, name, version, pinned[name], matrix)
		}
	}
}
