package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The README's "Put an existing MCP server behind it", as a new user does
// it: @modelcontextprotocol/server-everything (pinned in
// internal/upstream/testdata/everything) listed over stdio in the file
// OPENWOP_UPSTREAMS_FILE names, behind the stock server binary, called by
// three clients on the wire.

// installedEverything installs the pinned server-everything with npm ci
// into the cache directory internal/upstream's tests use (the same
// directory for the same lock file), and returns its node binary and entry
// point. It skips the test unless OPENWOP_CLIENTS=1.
func installedEverything(t *testing.T, root string) (node, main string) {
	t.Helper()
	if os.Getenv("OPENWOP_CLIENTS") != "1" {
		t.Skip("set OPENWOP_CLIENTS=1 to run the tests against @modelcontextprotocol/server-everything (needs npm; installs the pinned package)")
	}
	src := filepath.Join(root, "internal", "upstream", "testdata", "everything")
	manifest, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte{}, manifest...), lock...))
	cache := os.Getenv("OPENWOP_CLIENTS_CACHE")
	if cache == "" {
		if cache, err = os.UserCacheDir(); err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(cache, "openwop-clientmatrix")
	}
	dir := filepath.Join(cache, "everything-"+hex.EncodeToString(sum[:8]))
	node = filepath.Join(dir, "node_modules", "node", "bin", "node")
	main = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(filepath.Join(dir, ".installed")); err == nil {
		return node, main
	}
	tmp := fmt.Sprintf("%s.tmp-%d", dir, os.Getpid())
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": manifest, "package-lock.json": lock, ".installed": nil} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tmp, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, ".installed")); serr != nil { // not another run's install
			t.Fatalf("install server-everything into %s: %v", dir, err)
		}
	}
	return node, main
}

// wireClient is an MCP client on the wire that declares the capabilities
// in its _meta.
type wireClient struct {
	url  string
	caps string // the clientCapabilities object
	id   int
}

// A Tasks client, a blocking client with elicitation (MRTR), and a client
// with neither (companion tools).
const (
	capsTasks     = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	capsBlocking  = `{"elicitation":{}}`
	capsCompanion = `{}`
)

// post sends one request and returns the response; the caller reads the
// body with messages.
func (c *wireClient) post(ctx context.Context, t *testing.T, method, name string, params map[string]any) *http.Response {
	t.Helper()
	c.id++
	p := map[string]any{"_meta": json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + c.caps + `}`)}
	for k, v := range params {
		if k == "_meta" { // merged into the protocol's _meta
			m := map[string]any{}
			_ = json.Unmarshal(p["_meta"].(json.RawMessage), &m)
			for mk, mv := range v.(map[string]any) {
				m[mk] = mv
			}
			v = m
		}
		p[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": p})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp
}

// message is one JSON-RPC message of a response.
type message struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// messages calls each message of a response (one JSON body, or each SSE
// event) until each returns false or the body ends.
func messages(t *testing.T, resp *http.Response, each func(message) bool) {
	t.Helper()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("HTTP %d, undecodable answer %q: %v", resp.StatusCode, raw, err)
		}
		each(m)
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var m message
		if err := json.Unmarshal([]byte(strings.TrimSpace(d)), &m); err != nil {
			t.Fatalf("undecodable event %q: %v", d, err)
		}
		if !each(m) {
			return
		}
	}
}

// result sends a request and decodes its result into out (nil: ignored),
// failing on a JSON-RPC error. It returns the progress notifications of
// the response stream.
func (c *wireClient) result(t *testing.T, method, name string, params map[string]any, out any) (progress []map[string]any) {
	t.Helper()
	resp := c.post(context.Background(), t, method, name, params)
	defer resp.Body.Close()
	var res json.RawMessage
	messages(t, resp, func(m message) bool {
		switch {
		case m.Method == "notifications/progress":
			var p map[string]any
			_ = json.Unmarshal(m.Params, &p)
			progress = append(progress, p)
		case m.Error != nil:
			t.Fatalf("%s %s: %d %s", method, name, m.Error.Code, m.Error.Message)
		case m.Result != nil:
			res = m.Result
			return false
		}
		return true
	})
	if res == nil {
		t.Fatalf("%s %s: no result", method, name)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("%s %s: result %s: %v", method, name, res, err)
		}
	}
	return progress
}

// toolResult is the part of a tool result (or a task's) the test reads.
type toolResult struct {
	ResultType string `json:"resultType"`
	TaskID     string `json:"taskId"`
	Status     string `json:"status"`
	Message    string `json:"statusMessage"`
	Content    []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	InputRequests     map[string]struct {
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	} `json:"inputRequests"`
	RequestState string      `json:"requestState"`
	Result       *toolResult `json:"result"`
}

func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// upstreamLog is what the upstream process read on its stdin and wrote on
// its stdout: the test puts tee on both sides of it, so a message is in
// in once it was written to the upstream, and in out once the upstream
// wrote it.
type upstreamLog struct{ in, out string }

// jsonLines returns the JSON-RPC messages of a log, one a line.
func jsonLines(t *testing.T, file string) []upstreamMessage {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var ms []upstreamMessage
	for _, line := range strings.Split(string(b), "\n") {
		var m upstreamMessage
		if json.Unmarshal([]byte(line), &m) == nil {
			m.line = line
			ms = append(ms, m)
		}
	}
	return ms
}

// upstreamMessage is the part of a message to or from the upstream the
// test reads.
type upstreamMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Params struct {
		Name      string          `json:"name"`
		Arguments map[string]any  `json:"arguments"`
		RequestID json.RawMessage `json:"requestId"`
		Meta      struct {
			ProgressToken any `json:"progressToken"`
		} `json:"_meta"`
		ProgressToken any     `json:"progressToken"`
		Progress      float64 `json:"progress"`
		Total         float64 `json:"total"`
	} `json:"params"`
	line string
}

// waitFor polls until found returns true, failing after 60 s with what.
func waitFor(t *testing.T, what string, found func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !found() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 60 s: %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cancelled shows that the upstream saw the cancel of the tools/call of
// trigger-long-running-operation whose arguments had duration (as many
// steps of a second): it was sent notifications/cancelled for the call,
// and acted on it. server-everything goes on sending the call's progress
// to its last step, but its SDK sends no result for a cancelled request:
// once it wrote the last step's progress, and then the result of a later
// echo call made through the adapter, the call's result is not in out.
// It returns the notifications/cancelled the upstream read.
func (l upstreamLog) cancelled(t *testing.T, c *wireClient, duration int) string {
	t.Helper()
	var call upstreamMessage
	var cancel string
	waitFor(t, fmt.Sprintf("the upstream read notifications/cancelled for its tools/call (duration %d)", duration), func() bool {
		for _, m := range jsonLines(t, l.in) {
			switch {
			case m.Method == "tools/call" && m.Params.Arguments["duration"] == float64(duration):
				call = m
			case m.Method == "notifications/cancelled" && call.ID != nil && string(m.Params.RequestID) == string(call.ID):
				cancel = m.line
				return true
			}
		}
		return false
	})
	waitFor(t, fmt.Sprintf("the upstream wrote the last step's progress of its tools/call %s", call.ID), func() bool {
		for _, m := range jsonLines(t, l.out) {
			if m.Method == "notifications/progress" && fmt.Sprint(m.Params.ProgressToken) == fmt.Sprint(call.Params.Meta.ProgressToken) &&
				m.Params.Progress == float64(duration) {
				return true
			}
		}
		return false
	})
	echo := fmt.Sprintf("after %d", duration)
	var res toolResult
	c.result(t, "tools/call", "everything_echo", map[string]any{"name": "everything_echo", "arguments": map[string]any{"message": echo}}, &res)
	waitFor(t, "the upstream wrote the echo's result", func() bool {
		for _, m := range jsonLines(t, l.out) {
			if strings.Contains(string(m.Result), "Echo: "+echo) {
				return true
			}
		}
		return false
	})
	for _, m := range jsonLines(t, l.out) {
		if string(m.ID) == string(call.ID) && m.Method == "" {
			t.Fatalf("the upstream answered its cancelled tools/call %s: %s", call.ID, m.line)
		}
	}
	return cancel
}

// TestUpstreamEverythingFromTheREADME builds the stock server and starts
// it with OPENWOP_UPSTREAMS_FILE naming server-everything over stdio, as
// docs/upstreams.md shows. A Tasks client, a blocking client (MRTR) and a
// client with neither Tasks nor elicitation (companion tools) each run
// trigger-long-running-operation with progress, answer the question of
// trigger-elicitation-request, and cancel a long-running operation; the
// upstream is sent notifications/cancelled for each cancelled call and
// sends no result for it.
func TestUpstreamEverythingFromTheREADME(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the commands")
	}
	root := moduleRoot(t)
	node, main := installedEverything(t, root)
	dir := t.TempDir()
	build(t, root, "cmd/server", filepath.Join(dir, "server"))

	// The file of docs/upstreams.md's example, with tee on the upstream's
	// stdin and stdout.
	f := front{log: upstreamLog{in: filepath.Join(dir, "upstream-stdin.log"), out: filepath.Join(dir, "upstream-stdout.log")}}
	file := filepath.Join(dir, "upstreams.json")
	entry, _ := json.Marshal(map[string]any{
		"name": "everything", "command": "sh",
		"args":  []string{"-c", `tee -a "$0" | "$2" "$3" stdio | tee -a "$1"`, f.log.in, f.log.out, node, main},
		"tools": []string{"echo", "trigger-long-running-operation", "trigger-elicitation-request"},
	})
	if err := os.WriteFile(file, fmt.Appendf(nil, `{"upstreams":[%s]}`, entry), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := startStockServer(t, filepath.Join(dir, "server"), filepath.Join(dir, "data"), "OPENWOP_UPSTREAMS_FILE="+file)
	f.url = base + "/mcp"
	if names := (&client{url: f.url}).toolNames(t); !contains(names, longTool) || !contains(names, askTool) {
		t.Fatalf("tools/list = %v, want server-everything's tools under the prefix everything_", names)
	}
	t.Run("Tasks client", f.tasksClient)
	t.Run("blocking client", f.blockingClient)
	t.Run("companion client", f.companionClient)
}

// The tools of server-everything under the prefix of docs/upstreams.md's
// example.
const (
	longTool = "everything_trigger-long-running-operation"
	askTool  = "everything_trigger-elicitation-request"
)

// front is the stock server with server-everything behind it.
type front struct {
	url string // the MCP endpoint
	log upstreamLog
}

// everythingAnswer answers server-everything's question, a form with
// multi-select fields (docs/upstreams.md).
var everythingAnswer = map[string]any{"name": "Ada Lovelace", "integer": 7, "untitledMultipleSelectEnum": []string{"Piano"}}

// answered fails unless text is the upstream's account of everythingAnswer.
func answered(t *testing.T, text string) {
	t.Helper()
	if !strings.Contains(text, "- Name: Ada Lovelace") || !strings.Contains(text, "- Favorite Integer: 7") {
		t.Fatalf("the run's result = %q, want the upstream's account of the answer", text)
	}
}

// follow reads the task with tasks/get until until holds (60 s at most).
func (c *wireClient) follow(t *testing.T, id string, until func(toolResult) bool) toolResult {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var tk toolResult
		c.result(t, "tasks/get", id, map[string]any{"taskId": id}, &tk)
		if until(tk) {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s stuck in %s (%s)", id, tk.Status, tk.Message)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startTask calls tool with a task and returns the task's id.
func (c *wireClient) startTask(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	var created toolResult
	c.result(t, "tools/call", tool, map[string]any{"name": tool, "arguments": args}, &created)
	if created.ResultType != "task" || created.TaskID == "" {
		t.Fatalf("tools/call %s = %+v, want a task", tool, created)
	}
	return created.TaskID
}

// tasksClient: progress in tasks/get's status message, the question in
// inputRequests answered with tasks/update, a cancel with tasks/cancel.
func (f front) tasksClient(t *testing.T) {
	c := &wireClient{url: f.url, caps: capsTasks}
	id := c.startTask(t, longTool, map[string]any{"duration": 4, "steps": 4})
	c.follow(t, id, func(tk toolResult) bool { return strings.Contains(tk.Message, "/4)") })
	done := c.follow(t, id, func(tk toolResult) bool { return tk.Status != "working" })
	if done.Status != "completed" || done.Result == nil || !strings.Contains(done.Result.text(), "Long running operation completed") {
		t.Fatalf("task = %+v, want the operation completed", done)
	}

	id = c.startTask(t, askTool, map[string]any{})
	q := c.follow(t, id, func(tk toolResult) bool { return tk.Status != "working" })
	if q.Status != "input_required" || len(q.InputRequests) != 1 {
		t.Fatalf("task = %+v, want the upstream's question", q)
	}
	for key := range q.InputRequests {
		c.result(t, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": everythingAnswer}}}, nil)
	}
	done = c.follow(t, id, func(tk toolResult) bool { return tk.Status != "working" && tk.Status != "input_required" })
	if done.Status != "completed" || done.Result == nil {
		t.Fatalf("task = %+v, want it completed", done)
	}
	answered(t, done.Result.text())

	id = c.startTask(t, longTool, map[string]any{"duration": 20, "steps": 20})
	c.follow(t, id, func(tk toolResult) bool { return strings.Contains(tk.Message, "/20)") })
	c.result(t, "tasks/cancel", id, map[string]any{"taskId": id}, nil)
	c.follow(t, id, func(tk toolResult) bool { return tk.Status == "cancelled" })
	t.Logf("the upstream read %s", f.log.cancelled(t, c, 20))
}

// blockingClient: the question as an InputRequiredResult, retried with
// the answer and its requestState (MRTR); then progress and a cancel.
func (f front) blockingClient(t *testing.T) {
	c := &wireClient{url: f.url, caps: capsBlocking}
	var q toolResult
	c.result(t, "tools/call", askTool, map[string]any{"name": askTool, "arguments": map[string]any{}}, &q)
	if q.ResultType != "input_required" || len(q.InputRequests) != 1 || q.RequestState == "" {
		t.Fatalf("tools/call = %+v, want the upstream's question with a requestState", q)
	}
	responses := map[string]any{}
	for key := range q.InputRequests {
		responses[key] = map[string]any{"action": "accept", "content": everythingAnswer}
	}
	var done toolResult
	c.result(t, "tools/call", askTool, map[string]any{"name": askTool, "arguments": map[string]any{},
		"inputResponses": responses, "requestState": q.RequestState}, &done)
	answered(t, done.text())
	f.progressAndDisconnect(t, c, 21)
}

// companionClient: the question in the handoff, answered with
// openwop_run_answer, the result read with openwop_run_status; then
// progress and a cancel.
func (f front) companionClient(t *testing.T) {
	c := &wireClient{url: f.url, caps: capsCompanion}
	var handoff toolResult
	c.result(t, "tools/call", askTool, map[string]any{"name": askTool, "arguments": map[string]any{}}, &handoff)
	var status struct {
		RunID     string `json:"runId"`
		Status    string `json:"status"`
		Questions []struct {
			Key string `json:"key"`
		} `json:"questions"`
		Result *toolResult `json:"result"`
	}
	if err := json.Unmarshal(handoff.StructuredContent, &status); err != nil || status.RunID == "" || len(status.Questions) != 1 {
		t.Fatalf("tools/call = %+v, want the handoff with the upstream's question (%v)", handoff, err)
	}
	var read toolResult
	c.result(t, "tools/call", "openwop_run_answer", map[string]any{"name": "openwop_run_answer", "arguments": map[string]any{
		"runId": status.RunID, "key": status.Questions[0].Key, "content": everythingAnswer}}, &read)
	for status.Status != "completed" {
		c.result(t, "tools/call", "openwop_run_status", map[string]any{"name": "openwop_run_status",
			"arguments": map[string]any{"runId": status.RunID, "waitSeconds": 30}}, &read)
		if err := json.Unmarshal(read.StructuredContent, &status); err != nil || read.IsError || status.Status == "failed" || status.Status == "cancelled" {
			t.Fatalf("openwop_run_status = %+v (%v)", read, err)
		}
	}
	if status.Result == nil {
		t.Fatalf("openwop_run_status = %+v, want the result", read)
	}
	answered(t, status.Result.text())
	f.progressAndDisconnect(t, c, 22)
}

// progressAndDisconnect is what a client without Tasks does: a call with
// a progressToken gets the upstream's progress on its response stream
// before its result; a call whose connection the client closes before
// the answer is cancelled (the call owns its run), and the upstream sees
// the cancel. duration names the cancelled call.
func (f front) progressAndDisconnect(t *testing.T, c *wireClient, duration int) {
	t.Helper()
	var res toolResult
	progress := c.result(t, "tools/call", longTool, map[string]any{"name": longTool,
		"arguments": map[string]any{"duration": 3, "steps": 3}, "_meta": map[string]any{"progressToken": "p1"}}, &res)
	if !strings.Contains(res.text(), "Long running operation completed") {
		t.Fatalf("tools/call = %+v, want the operation completed", res)
	}
	counted := false
	for _, p := range progress {
		counted = counted || p["progressToken"] == "p1" && strings.Contains(fmt.Sprint(p["message"]), "/3)")
	}
	if !counted {
		t.Fatalf("notifications/progress = %v, want one telling the upstream's steps of 3", progress)
	}

	ctx, cancel := context.WithCancel(context.Background())
	resp := c.post(ctx, t, "tools/call", longTool, map[string]any{"name": longTool,
		"arguments": map[string]any{"duration": duration, "steps": duration}, "_meta": map[string]any{"progressToken": "p2"}})
	messages(t, resp, func(m message) bool {
		if m.Result != nil || m.Error != nil {
			t.Fatalf("tools/call answered before it was cancelled: %s %+v", m.Result, m.Error)
		}
		return m.Method != "notifications/progress" || !strings.Contains(string(m.Params), fmt.Sprintf("/%d)", duration))
	})
	cancel()
	resp.Body.Close()
	t.Logf("the upstream read %s", f.log.cancelled(t, c, duration))
}
