package upstream_test

// A real upstream nobody here wrote: @modelcontextprotocol/server-everything,
// pinned in testdata/everything (package.json and package-lock.json),
// installed with npm ci once into a cache directory, behind a worker of
// the real embedded Temporal server over stdio and over streamable HTTP.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/upstream"
)

const (
	// envClients runs the tests that install npm packages (scripts/test.sh
	// sets it, as for the client matrix).
	envClients = "OPENWOP_CLIENTS"
	// envCacheDir is where the pinned packages are installed (default: the
	// user cache directory), one directory per lock file content.
	envCacheDir = "OPENWOP_CLIENTS_CACHE"
)

// everything is the installed server-everything: the pinned Node.js
// binary and the server's entry point.
type everything struct{ node, main string }

// installEverything installs testdata/everything with npm ci, once per
// content of its package.json and package-lock.json, into the cache
// directory. It skips the test unless OPENWOP_CLIENTS=1.
func installEverything(t *testing.T) everything {
	t.Helper()
	if os.Getenv(envClients) != "1" {
		t.Skip("set " + envClients + "=1 to run the tests against @modelcontextprotocol/server-everything (needs npm; installs the pinned package)")
	}
	src := filepath.Join("testdata", "everything")
	manifest, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
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
	dir := filepath.Join(cache, "everything-"+hex.EncodeToString(sum[:8]))
	ev := everything{
		node: filepath.Join(dir, "node_modules", "node", "bin", "node"),
		main: filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"),
	}
	if _, err := os.Stat(filepath.Join(dir, ".installed")); err == nil {
		return ev
	}
	tmp := fmt.Sprintf("%s.tmp-%d", dir, os.Getpid())
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": manifest, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tmp, err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".installed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, ".installed")); serr != nil { // not another run's install
			t.Fatalf("install server-everything into %s: %v", dir, err)
		}
	}
	for _, f := range []string{ev.node, ev.main} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("npm ci installed no %s: %v", filepath.Base(f), err)
		}
	}
	return ev
}

// serveHTTP runs the server over streamable HTTP until the test ends and
// returns its URL.
func (ev everything) serveHTTP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(ev.node, ev.main, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, "server-everything:", sc.Text())
			if !said && strings.Contains(sc.Text(), "listening on port") {
				said = true
				listening <- true
			}
		}
		if !said {
			listening <- false
		}
	}()
	if !<-listening {
		t.Fatal("server-everything exited before it listened")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

func TestServerEverything(t *testing.T) {
	ev := installEverything(t)
	env := testenv.Temporal(t)
	for _, tc := range []struct {
		name  string
		entry func(t *testing.T) string
	}{
		{"stdio", func(*testing.T) string {
			return fmt.Sprintf(`"command":%q,"args":[%q,"stdio"]`, ev.node, ev.main)
		}},
		{"streamable HTTP", func(t *testing.T) string { return fmt.Sprintf(`"url":%q`, ev.serveHTTP(t)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := randomPrefix()
			file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"everything",%s,"prefix":%q,
				"tools":["echo","trigger-long-running-operation","trigger-elicitation-request","get-structured-content"]}]}`,
				tc.entry(t), prefix), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			c := serveUpstreams(t, env, file)
			testEverything(t, c, prefix)
		})
	}
}

// testEverything calls the tools of server-everything served under prefix.
func testEverything(t *testing.T, c *mcpClient, prefix string) {
	tools := c.waitTools(prefix+"echo", prefix+"trigger-long-running-operation",
		prefix+"trigger-elicitation-request", prefix+"get-structured-content")
	t.Run("echo", func(t *testing.T) {
		res := c.result("tools/call", map[string]any{"name": prefix + "echo", "arguments": map[string]any{"message": "hi"}}, nil)
		if text := fmt.Sprint(res["content"]); res["isError"] == true || !strings.Contains(text, "Echo: hi") {
			t.Fatalf("tools/call echo = %v, want Echo: hi", res)
		}
	})
	// A blocking call with a progress token: the upstream's progress
	// reaches the client as notifications/progress before the result.
	t.Run("trigger-long-running-operation", func(t *testing.T) {
		res := c.result("tools/call", map[string]any{"name": prefix + "trigger-long-running-operation",
			"arguments": map[string]any{"duration": 3, "steps": 3}, "_meta": map[string]any{"progressToken": "p1"}}, nil)
		if !strings.Contains(fmt.Sprint(res["content"]), "Long running operation completed") {
			t.Fatalf("tools/call = %v, want the operation completed", res)
		}
		// The notifications carry the run's status message, which tells
		// the upstream's counts ("(2/3)").
		var progress []string
		counted := false
		for _, m := range c.messages {
			if m["method"] == "notifications/progress" {
				p, _ := m["params"].(map[string]any)
				progress = append(progress, fmt.Sprint(p))
				counted = counted || p["progressToken"] == "p1" && strings.Contains(fmt.Sprint(p["message"]), "/3)")
			}
		}
		if !counted {
			t.Fatalf("notifications/progress of the call = %v, want one telling the upstream's steps of 3, with token p1", progress)
		}
	})
	// The upstream's schema is a form of every field MCP 2025-11-25
	// allows, multi-selects among them: the question is asked with it,
	// and an answer is checked against it before the upstream sees it.
	t.Run("trigger-elicitation-request", func(t *testing.T) {
		created := c.result("tools/call", map[string]any{"name": prefix + "trigger-elicitation-request", "arguments": map[string]any{}}, taskCaps)
		taskID, _ := created["taskId"].(string)
		res := c.waitTask(taskID, func(r map[string]any) bool { return r["status"] != "working" })
		reqs, _ := res["inputRequests"].(map[string]any)
		var key string
		for k, r := range reqs {
			key = k
			params, _ := r.(map[string]any)["params"].(map[string]any)
			schema, _ := params["requestedSchema"].(map[string]any)
			props, _ := schema["properties"].(map[string]any)
			multi, _ := props["untitledMultipleSelectEnum"].(map[string]any)
			if params["message"] != "Please provide inputs for the following fields:" || fmt.Sprint(schema["required"]) != "[name]" ||
				len(props) != 13 || multi["type"] != "array" || multi["maxItems"] != 3.0 {
				t.Fatalf("question = %v, want the upstream's message and form", params)
			}
		}
		if len(reqs) != 1 {
			t.Fatalf("tasks/get = %v, want the upstream's one question", res)
		}
		for _, refused := range []struct{ content, field string }{
			{`{"check":true}`, "name is required"},
			{`{"name":"Ada","untitledMultipleSelectEnum":["Guitar","Piano","Violin","Drums"]}`, "untitledMultipleSelectEnum: has 4 items"},
			{`{"name":"Ada","titledMultipleSelectEnum":["fish-9"]}`, "titledMultipleSelectEnum[]: fish-9 is not one of"},
		} {
			_, rpcErr, raw := c.call("tasks/update", map[string]any{"taskId": taskID, "inputResponses": map[string]any{
				key: map[string]any{"action": "accept", "content": json.RawMessage(refused.content)}}}, taskCaps)
			if rpcErr == nil || rpcErr.Code != -32602 || !strings.Contains(string(raw), refused.field) {
				t.Fatalf("tasks/update with %s: %s, want -32602 naming %q", refused.content, raw, refused.field)
			}
		}
		c.result("tasks/update", map[string]any{"taskId": taskID, "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada Lovelace", "integer": 7,
				"untitledMultipleSelectEnum": []string{"Piano", "Bass"}, "titledMultipleSelectEnum": []string{"fish-2"}}}}}, taskCaps)
		done := c.waitTask(taskID, func(r map[string]any) bool { return r["status"] == "completed" })
		if text := fmt.Sprint(done["result"]); !strings.Contains(text, "- Name: Ada Lovelace") || !strings.Contains(text, "- Favorite Integer: 7") ||
			!strings.Contains(text, "fish-2") {
			t.Fatalf("the run's result = %s, want the upstream's account of the answer", text)
		}
	})
	t.Run("get-structured-content", func(t *testing.T) {
		if out := fmt.Sprint(tools[prefix+"get-structured-content"]["outputSchema"]); !strings.Contains(out, "humidity") {
			t.Fatalf("outputSchema = %s, want the upstream's", out)
		}
		res := c.result("tools/call", map[string]any{"name": prefix + "get-structured-content", "arguments": map[string]any{"location": "Chicago"}}, nil)
		if sc, _ := json.Marshal(res["structuredContent"]); res["isError"] == true ||
			string(sc) != `{"conditions":"Light rain / drizzle","humidity":82,"temperature":36}` {
			t.Fatalf("tools/call get-structured-content = %v, want the upstream's structuredContent", res)
		}
	})
}
