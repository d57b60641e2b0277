package catalog_test

// End-to-end tests of the catalog in Temporal: workers publish (or tools are
// declared), a Live source reads them, and an MCP client calls the tools
// over HTTP (MCP 2026-07-28 with the Tasks extension) through a
// mcpmount.Mount backed by runs.Service, on the real embedded Temporal
// server.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/workflows"
)

// startCounter is the real run service, counting the runs the mount asks
// it to start (the calls, whether or not they succeed).
type startCounter struct {
	runs.Backend
	mu    sync.Mutex
	calls int
}

func (c *startCounter) Start(ctx context.Context, req runs.NewRun) (signals.Snapshot, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.Backend.Start(ctx, req)
}

func (c *startCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// serveMount serves a Mount over the source on a test HTTP server and
// returns the URL of its /mcp endpoint and its run service.
func serveMount(t *testing.T, env *testenv.Env, source catalog.Source) (string, *startCounter) {
	t.Helper()
	svc := &startCounter{Backend: runs.New(env.Client, env.Logger, runs.Options{Namespace: env.Namespace})}
	m, err := mcpmount.New(mcpmount.Options{
		Runs:         svc,
		Catalog:      source,
		Logger:       env.Logger,
		PollInterval: 200 * time.Millisecond,
		// A blocking call whose run never ends fails the test in time.
		MaxBlockingWait: 30 * time.Second,
		// The tests follow each call that takes a task by its task, however
		// short its run: no inline answers.
		InlineWait: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", m)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", svc
}

// mcpClient sends MCP 2026-07-28 requests: the _meta triple in params and
// the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers.
type mcpClient struct {
	t    *testing.T
	url  string
	caps map[string]any
	id   int
}

// taskCaps declares the Tasks extension; blockingCaps declares nothing,
// so tools/call waits for the run's end.
var (
	taskCaps     = map[string]any{"extensions": map[string]any{mcpmount.ExtensionTasks: map[string]any{}}}
	blockingCaps = map[string]any{}
)

// httpClient bounds every request, so a call that never answers fails the
// test instead of hanging it.
var httpClient = &http.Client{Timeout: time.Minute}

// reply is a decoded JSON-RPC response.
type reply struct {
	Status int
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Raw []byte
}

func (c *mcpClient) call(method string, params map[string]any) reply {
	c.t.Helper()
	c.id++
	p := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcpmount.ProtocolVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "catalog-e2e", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": c.caps,
	}}
	for k, v := range params {
		p[k] = v
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": p})
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcpmount.ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	switch method {
	case "tools/call":
		req.Header.Set("Mcp-Name", params["name"].(string))
	case "tasks/get", "tasks/update", "tasks/cancel":
		req.Header.Set("Mcp-Name", params["taskId"].(string))
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	out := reply{}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				raw = []byte(d)
			}
		}
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		c.t.Fatalf("%s: decode response %q: %v", method, raw, err)
	}
	out.Status, out.Raw = resp.StatusCode, raw
	return out
}

// result fails unless the call succeeded and returns its result.
func (c *mcpClient) result(method string, params map[string]any) map[string]any {
	c.t.Helper()
	r := c.call(method, params)
	if r.Status != http.StatusOK || r.Error != nil || r.Result == nil {
		c.t.Fatalf("%s: want a result, got HTTP %d %s", method, r.Status, r.Raw)
	}
	return r.Result
}

// toolNames lists tools/list.
func (c *mcpClient) toolNames() map[string]map[string]any {
	c.t.Helper()
	out := map[string]map[string]any{}
	for _, x := range c.result("tools/list", map[string]any{})["tools"].([]any) {
		d := x.(map[string]any)
		out[d["name"].(string)] = d
	}
	return out
}

// waitTask polls tasks/get until the task has the status (20 s at most).
func (c *mcpClient) waitTask(taskID, status string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res := c.result("tasks/get", map[string]any{"taskId": taskID})
		if res["status"] == status {
			return res
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s not %s within 20 s; last %v", taskID, status, res)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// toolText is the text of a CallToolResult's single content block.
func toolText(t *testing.T, result any) string {
	t.Helper()
	r, _ := result.(map[string]any)
	cs, _ := r["content"].([]any)
	if len(cs) != 1 {
		t.Fatalf("result %v does not hold one content block", result)
	}
	text, _ := cs[0].(map[string]any)["text"].(string)
	return text
}

// runOf is the run id (the workflow ID) of an MCP task id.
var runOf = testsupport.RunOf

// countRuns counts the workflows visibility finds for query.
// Visibility is written asynchronously, even on the embedded server, so a
// run started a moment ago may not be counted yet.
func countRuns(t *testing.T, c client.Client, query string) int {
	t.Helper()
	resp, err := c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		t.Fatalf("count workflows %q: %v", query, err)
	}
	return int(resp.GetCount())
}

// workerIdentities are the identities of the workers that ran the run's
// workflow tasks.
func workerIdentities(t *testing.T, c client.Client, runID string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	it := c.GetWorkflowHistory(context.Background(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", runID, err)
		}
		// The completion names the worker that ran the task (an eagerly
		// started first task records the starting client on its start).
		if a := ev.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			out[a.GetIdentity()] = true
		}
	}
	return out
}

// keyword decodes a Keyword search attribute of a described workflow.
func keyword(t *testing.T, desc *workflowservice.DescribeWorkflowExecutionResponse, name string) string {
	t.Helper()
	p, ok := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[name]
	if !ok {
		t.Fatalf("search attribute %s is not set", name)
	}
	var v string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
		t.Fatalf("search attribute %s: %v", name, err)
	}
	return v
}

// Two workers with different tools on two task queues: each tool is listed
// with its own queue, and each call runs on its own worker, as a task and
// as a blocking call.
func TestE2ETwoTaskQueues(t *testing.T) {
	env := testenv.Temporal(t)
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type side struct {
		tool, tq, identity, label string
	}
	sides := []side{
		{tool: unique("alpha"), tq: testenv.UniqueTaskQueue(t), identity: unique("worker-alpha"), label: "alpha"},
		{tool: unique("beta"), tq: testenv.UniqueTaskQueue(t), identity: unique("worker-beta"), label: "beta"},
	}
	// alpha's output schema and annotations travel with its publication.
	echoSchema := `{"type":"object","properties":{"echo":{"type":"string"},"worker":{"type":"string"}},"required":["echo","worker"]}`
	shape := map[string][]workflows.ToolOption{"alpha": {workflows.WithOutputSchema(json.RawMessage(echoSchema)),
		workflows.WithTitle("Echo"), workflows.WithReadOnlyHint()}}
	for _, s := range sides {
		runWorker(t, env.Client, newRegistry(t, echoTool(s.tool, "Echo on "+s.label+".", s.label, shape[s.label]...)), s.tq, s.identity)
	}
	for _, s := range sides {
		if got := waitListed(t, live, s.tool).Spec().TaskQueue; got != s.tq {
			t.Fatalf("tool %s listed on task queue %q, want %q", s.tool, got, s.tq)
		}
	}
	url, _ := serveMount(t, env, live)
	listedOverMCP := (&mcpClient{t: t, url: url, caps: taskCaps}).toolNames()
	for _, s := range sides {
		if listedOverMCP[s.tool] == nil {
			t.Fatalf("tools/list %v lacks %s", listedOverMCP, s.tool)
		}
	}
	alpha, beta := listedOverMCP[sides[0].tool], listedOverMCP[sides[1].tool]
	if got, _ := json.Marshal(alpha["outputSchema"]); !jsonEqual(t, got, []byte(echoSchema)) {
		t.Fatalf("tools/list outputSchema of alpha = %s, want %s", got, echoSchema)
	}
	if got, _ := json.Marshal(alpha["annotations"]); !jsonEqual(t, got, []byte(`{"title":"Echo","readOnlyHint":true}`)) {
		t.Fatalf("tools/list annotations of alpha = %s", got)
	}
	if beta["outputSchema"] != nil || beta["annotations"] != nil {
		t.Fatalf("tools/list of beta = %v, want neither outputSchema (a map output) nor annotations", beta)
	}

	for _, s := range sides {
		for _, mode := range []string{"task", "blocking"} {
			t.Run(s.label+"/"+mode, func(t *testing.T) {
				text := s.label + "-" + mode
				args := map[string]any{"name": s.tool, "arguments": map[string]any{"text": text}}
				var result any
				var runID string
				if mode == "task" {
					// The run holds until released, so the call answers a task.
					c := &mcpClient{t: t, url: url, caps: taskCaps}
					args["arguments"].(map[string]any)["hold"] = true
					created := c.result("tools/call", args)
					if created["resultType"] != "task" || created["status"] != "working" {
						t.Fatalf("tools/call = %v, want a working CreateTaskResult", created)
					}
					taskID := created["taskId"].(string)
					runID = runOf(t, taskID)
					if err := env.Client.SignalWorkflow(context.Background(), runID, "", "release", nil); err != nil {
						t.Fatal(err)
					}
					result = c.waitTask(taskID, "completed")["result"]
				} else {
					c := &mcpClient{t: t, url: url, caps: blockingCaps}
					result = c.result("tools/call", args)
					if result.(map[string]any)["resultType"] != "complete" {
						t.Fatalf("blocking tools/call = %v", result)
					}
					runID = findRun(t, env.Client, s.tool, s.tq, text)
				}
				r, _ := result.(map[string]any)
				sc, _ := r["structuredContent"].(map[string]any)
				if r["isError"] != false || sc["worker"] != s.label || sc["echo"] != text {
					t.Fatalf("result = %v, want the echo of %q by worker %s", result, text, s.label)
				}
				desc, err := env.Client.DescribeWorkflowExecution(context.Background(), runID, "")
				if err != nil {
					t.Fatal(err)
				}
				if got := desc.GetExecutionConfig().GetTaskQueue().GetName(); got != s.tq {
					t.Fatalf("run %s on task queue %q, want %q", runID, got, s.tq)
				}
				if got := desc.GetWorkflowExecutionInfo().GetType().GetName(); got != s.tool {
					t.Fatalf("run %s has workflow type %q, want %q", runID, got, s.tool)
				}
				if ids := workerIdentities(t, env.Client, runID); len(ids) != 1 || !ids[s.identity] {
					t.Fatalf("run %s executed by %v, want only %s", runID, ids, s.identity)
				}
			})
		}
	}
}

// tools/call of a tool without a live worker is a JSON-RPC error naming
// the tool, and no run starts.
func TestE2ECallWithoutLiveWorker(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	pubQueue, declQueue := testenv.UniqueTaskQueue(t), testenv.UniqueTaskQueue(t)
	published, declared := unique("orphan"), unique("undeployed")
	declaredType := declared + ".v1"
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	ghost := signals.Publication{TaskQueue: pubQueue, Identity: unique("gone-worker"), Tools: []signals.ToolSpec{{
		Name: published, Description: "Its worker is gone.", InputSchema: schema,
	}}}
	if err := catalog.Publish(ctx, env.Client, ghost); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = catalog.Withdraw(context.Background(), env.Client, pubQueue, ghost.Identity) })
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{Declared: []signals.ToolSpec{{
		Name: declared, Description: "Nobody polls its queue.", InputSchema: schema,
		TaskQueue: declQueue, WorkflowType: declaredType, Contract: signals.ContractPlain,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	// Visibility lists the new publication within moments.
	eventually(t, waitBound, "the orphan publication seen", func() (bool, string) {
		_, err := live.Lookup(ctx, published)
		var unav *catalog.UnavailableError
		return errors.As(err, &unav), fmt.Sprintf("Lookup: %v", err)
	})
	url, svc := serveMount(t, env, live)
	if names := (&mcpClient{t: t, url: url, caps: taskCaps}).toolNames(); names[published] != nil || names[declared] != nil {
		t.Fatalf("tools/list %v lists a tool without a live worker", names)
	}

	for _, tc := range []struct{ tool, queue string }{{published, pubQueue}, {declared, declQueue}} {
		for mode, caps := range map[string]map[string]any{"task": taskCaps, "blocking": blockingCaps} {
			t.Run(tc.tool+"/"+mode, func(t *testing.T) {
				c := &mcpClient{t: t, url: url, caps: caps}
				r := c.call("tools/call", map[string]any{"name": tc.tool, "arguments": map[string]any{"n": 1}})
				if r.Error == nil || r.Result != nil {
					t.Fatalf("tools/call = HTTP %d %s, want a JSON-RPC error", r.Status, r.Raw)
				}
				if r.Error.Code != -32602 {
					t.Fatalf("error code = %d, want -32602 (%s)", r.Error.Code, r.Raw)
				}
				for _, want := range []string{tc.tool, "no live worker", tc.queue} {
					if !strings.Contains(r.Error.Message, want) {
						t.Fatalf("error %q does not mention %q", r.Error.Message, want)
					}
				}
			})
		}
	}
	if n := svc.count(); n != 0 {
		t.Fatalf("the mount asked for %d runs of tools without a live worker", n)
	}

	// Control: once a worker polls the declared tool's queue, the same
	// call starts a run. When visibility lists that run, it would list any
	// run started before it too: there is none on either queue.
	w := worker.New(env.Client, declQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(func(_ workflow.Context, in map[string]any) (map[string]any, error) { return in, nil },
		workflow.RegisterOptions{Name: declaredType})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	waitListed(t, live, declared)
	c := &mcpClient{t: t, url: url, caps: taskCaps}
	created := c.result("tools/call", map[string]any{"name": declared, "arguments": map[string]any{"n": 1}})
	runID := runOf(t, created["taskId"].(string))
	eventually(t, waitBound, "the control run visible", func() (bool, string) {
		n := countRuns(t, env.Client, fmt.Sprintf("WorkflowId = '%s'", runID))
		return n == 1, fmt.Sprintf("%d listed", n)
	})
	for q, want := range map[string]int{
		fmt.Sprintf("TaskQueue = '%s'", declQueue):                  1,
		fmt.Sprintf("%s = '%s'", signals.SearchAttrTool, declared):  1,
		fmt.Sprintf("TaskQueue = '%s'", pubQueue):                   0,
		fmt.Sprintf("%s = '%s'", signals.SearchAttrTool, published): 0,
		fmt.Sprintf("WorkflowType = '%s'", declaredType):            1,
	} {
		if n := countRuns(t, env.Client, q); n != want {
			t.Fatalf("%d workflows match %s, want %d", n, q, want)
		}
	}
}

// refundWorkflow is a plain workflow written with the raw SDK, knowing
// nothing of the run contract: it waits delayMs (or a "release" signal),
// then refunds, or fails when asked to.
func refundWorkflow(ctx workflow.Context, in map[string]any) (map[string]any, error) {
	if fail, _ := in["fail"].(bool); fail {
		return nil, fmt.Errorf("refund of order %v declined by the bank", in["orderId"])
	}
	delay, _ := in["delayMs"].(float64)
	var waitErr error
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(ctx, time.Duration(delay)*time.Millisecond), func(f workflow.Future) {
		waitErr = f.Get(ctx, nil)
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, "release"), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
	})
	sel.Select(ctx)
	if waitErr != nil {
		return nil, waitErr // cancelled
	}
	return map[string]any{"orderId": in["orderId"], "amountCents": in["amountCents"], "refunded": true}, nil
}

// A plain (foreign) workflow declared in a file is served end to end over
// MCP: listed, started as a task with the arguments object as its input,
// completed with its result, cancelled, and failed as an error result.
func TestE2EDeclaredPlainWorkflow(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	tq := testenv.UniqueTaskQueue(t)
	w := worker.New(env.Client, tq, worker.Options{})
	w.RegisterWorkflowWithOptions(refundWorkflow, workflow.RegisterOptions{Name: "refund.v1"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	// The declaration file of a plain workflow.
	schema := `{"type":"object","properties":{"orderId":{"type":"string"},"amountCents":{"type":"integer","minimum":1},"delayMs":{"type":"integer","minimum":0},"fail":{"type":"boolean"}},"required":["orderId","amountCents"]}`
	// Its results are declared: a refund above 100000 cents is outside
	// the output schema (the workflow returns it anyway).
	output := `{"type":"object","properties":{"orderId":{"type":"string"},"amountCents":{"type":"integer","maximum":100000},"refunded":{"type":"boolean"}},"required":["orderId","refunded"]}`
	destructive := true
	want := signals.ToolSpec{
		Name: "refund", Description: "Refund an order.", InputSchema: json.RawMessage(schema),
		TaskSupport: signals.TaskOptional, TaskQueue: tq, WorkflowType: "refund.v1", Contract: signals.ContractPlain,
		OutputSchema: json.RawMessage(output), Annotations: &signals.ToolAnnotations{Title: "Refund", DestructiveHint: &destructive},
	}
	file := fmt.Sprintf(`[{"name":"refund","description":"Refund an order.","inputSchema":%s,"taskSupport":"optional","taskQueue":%q,"workflowType":"refund.v1","contract":"plain",
  "outputSchema":%s,"annotations":{"title":"Refund","destructiveHint":true}}]`, schema, tq, output)
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	specs, err := catalog.LoadDeclarations(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(specs, []signals.ToolSpec{want}) {
		t.Fatalf("LoadDeclarations = %+v, want %+v", specs, want)
	}
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{Declared: specs})
	if err != nil {
		t.Fatal(err)
	}
	waitListed(t, live, "refund")
	url, svc := serveMount(t, env, live)
	c := &mcpClient{t: t, url: url, caps: taskCaps}

	d := c.toolNames()["refund"]
	if d == nil || d["description"] != "Refund an order." {
		t.Fatalf("tools/list entry of refund = %v", d)
	}
	if got, _ := json.Marshal(d["inputSchema"]); !jsonEqual(t, got, []byte(schema)) {
		t.Fatalf("tools/list inputSchema = %s, want %s", got, schema)
	}
	if got, _ := json.Marshal(d["outputSchema"]); !jsonEqual(t, got, []byte(output)) {
		t.Fatalf("tools/list outputSchema = %s, want %s", got, output)
	}
	if got, _ := json.Marshal(d["annotations"]); !jsonEqual(t, got, []byte(`{"title":"Refund","destructiveHint":true}`)) {
		t.Fatalf("tools/list annotations = %s", got)
	}

	start := func(args map[string]any) (taskID, runID string) {
		t.Helper()
		created := c.result("tools/call", map[string]any{"name": "refund", "arguments": args})
		if created["resultType"] != "task" || created["status"] != "working" {
			t.Fatalf("tools/call = %v, want a working CreateTaskResult", created)
		}
		taskID = created["taskId"].(string)
		return taskID, runOf(t, taskID)
	}

	t.Run("completed", func(t *testing.T) {
		args := map[string]any{"orderId": "o-1", "amountCents": 1250, "delayMs": 600000}
		taskID, runID := start(args)
		if got := c.result("tasks/get", map[string]any{"taskId": taskID}); got["status"] != "working" || got["result"] != nil {
			t.Fatalf("tasks/get of a running plain run = %v", got)
		}

		// The Temporal side: the run id is the workflow ID, started on the
		// declared queue and type with the arguments object as its input.
		if !strings.HasPrefix(runID, auth.AnonymousTenant+"/") || !runid.Valid(runID) {
			t.Fatalf("run id %q is not tenant/opaque", runID)
		}
		desc, err := env.Client.DescribeWorkflowExecution(ctx, runID, "")
		if err != nil {
			t.Fatalf("describe workflow %q: %v", runID, err)
		}
		info := desc.GetWorkflowExecutionInfo()
		if info.GetExecution().GetWorkflowId() != runID || info.GetType().GetName() != "refund.v1" ||
			desc.GetExecutionConfig().GetTaskQueue().GetName() != tq || info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("workflow = id %s type %s queue %s status %s", info.GetExecution().GetWorkflowId(), info.GetType().GetName(),
				desc.GetExecutionConfig().GetTaskQueue().GetName(), info.GetStatus())
		}
		for attr, wantVal := range map[string]string{
			signals.SearchAttrTenant: auth.AnonymousTenant, signals.SearchAttrTool: "refund",
			signals.SearchAttrTransport: signals.TransportMCP, signals.SearchAttrStatus: string(signals.StatusRunning),
		} {
			if got := keyword(t, desc, attr); got != wantVal {
				t.Fatalf("search attribute %s = %q, want %q", attr, got, wantVal)
			}
		}
		var contract signals.Contract
		if p := info.GetMemo().GetFields()[signals.MemoContract]; p == nil || converter.GetDefaultDataConverter().FromPayload(p, &contract) != nil || contract != signals.ContractPlain {
			t.Fatalf("memo %s = %q, want plain", signals.MemoContract, contract)
		}
		var input map[string]any
		if startInput(t, env.Client, runID, &input); !reflect.DeepEqual(input, map[string]any{"orderId": "o-1", "amountCents": 1250.0, "delayMs": 600000.0}) {
			t.Fatalf("workflow input = %v, want the arguments object", input)
		}

		if err := env.Client.SignalWorkflow(ctx, runID, "", "release", nil); err != nil {
			t.Fatal(err)
		}
		done := c.waitTask(taskID, "completed")
		res, _ := done["result"].(map[string]any)
		wantOut := map[string]any{"orderId": "o-1", "amountCents": 1250.0, "refunded": true}
		if res["isError"] != false || !reflect.DeepEqual(res["structuredContent"], wantOut) {
			t.Fatalf("completed task = %v, want structuredContent %v", done, wantOut)
		}
		if text := toolText(t, res); !jsonEqual(t, []byte(text), mustJSON(t, wantOut)) {
			t.Fatalf("result text = %q, want the result as JSON", text)
		}
	})

	t.Run("completed after its own wait, blocking call", func(t *testing.T) {
		b := &mcpClient{t: t, url: url, caps: blockingCaps}
		res := b.result("tools/call", map[string]any{"name": "refund", "arguments": map[string]any{"orderId": "o-2", "amountCents": 1, "delayMs": 200}})
		wantOut := map[string]any{"orderId": "o-2", "amountCents": 1.0, "refunded": true}
		if res["resultType"] != "complete" || res["isError"] != false || !reflect.DeepEqual(res["structuredContent"], wantOut) {
			t.Fatalf("blocking tools/call = %v", res)
		}
	})

	t.Run("a result outside the declared output schema is a tool error", func(t *testing.T) {
		b := &mcpClient{t: t, url: url, caps: blockingCaps}
		res := b.result("tools/call", map[string]any{"name": "refund", "arguments": map[string]any{"orderId": "o-9", "amountCents": 250000}})
		if text := toolText(t, res); res["isError"] != true || res["structuredContent"] != nil || !strings.Contains(text, "output schema") || !strings.Contains(text, "maximum") {
			t.Fatalf("blocking tools/call = %v, want a tool error naming the output schema's maximum", res)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		taskID, runID := start(map[string]any{"orderId": "o-3", "amountCents": 5, "delayMs": 600000})
		ack := c.result("tasks/cancel", map[string]any{"taskId": taskID})
		if ack["resultType"] != "complete" {
			t.Fatalf("tasks/cancel = %v", ack)
		}
		got := c.waitTask(taskID, "cancelled")
		if got["result"] != nil {
			t.Fatalf("cancelled task = %v, want no result", got)
		}
		desc, err := env.Client.DescribeWorkflowExecution(ctx, runID, "")
		if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
			t.Fatalf("workflow after tasks/cancel = %v, %v; want canceled", desc.GetWorkflowExecutionInfo().GetStatus(), err)
		}
	})

	t.Run("failed", func(t *testing.T) {
		taskID, _ := start(map[string]any{"orderId": "o-4", "amountCents": 5, "fail": true})
		got := c.waitTask(taskID, "completed")
		res, _ := got["result"].(map[string]any)
		if res["isError"] != true || got["error"] != nil {
			t.Fatalf("failed plain run = %v, want a completed task with isError", got)
		}
		if text := toolText(t, res); !strings.Contains(text, "refund of order o-4 declined by the bank") {
			t.Fatalf("result text = %q, want the workflow's failure message", text)
		}
	})

	t.Run("invalid arguments start nothing", func(t *testing.T) {
		before := svc.count()
		r := c.call("tools/call", map[string]any{"name": "refund", "arguments": map[string]any{"orderId": "o-5"}})
		res := r.Result
		if r.Error != nil || res == nil || res["isError"] != true || !strings.Contains(toolText(t, res), "amountCents") {
			t.Fatalf("tools/call without amountCents = HTTP %d %s, want a tool result with isError naming amountCents", r.Status, r.Raw)
		}
		if after := svc.count(); after != before {
			t.Fatalf("the mount asked for a run of a call with invalid arguments (%d -> %d)", before, after)
		}
	})
}

// startInput decodes the single input of the run's workflow into v.
func startInput(t *testing.T, c client.Client, runID string, v any) {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	ev, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	ps := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(ps) != 1 {
		t.Fatalf("workflow %s started with %d inputs, want 1", runID, len(ps))
	}
	if err := converter.GetDefaultDataConverter().FromPayload(ps[0], v); err != nil {
		t.Fatal(err)
	}
}

// findRun returns the run of the echo tool on taskQueue that was called
// with text.
func findRun(t *testing.T, c client.Client, tool, taskQueue, text string) string {
	t.Helper()
	query := fmt.Sprintf("%s = '%s' AND TaskQueue = '%s'", signals.SearchAttrTool, tool, taskQueue)
	var found string
	eventually(t, waitBound, fmt.Sprintf("the run of %s called with %q listed", tool, text), func() (bool, string) {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range resp.GetExecutions() {
			id := info.GetExecution().GetWorkflowId()
			var req signals.StartRequest
			startInput(t, c, id, &req)
			var in echoIn
			if json.Unmarshal(req.Arguments, &in) == nil && in.Text == text {
				found = id
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d runs listed", len(resp.GetExecutions()))
	})
	return found
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("not JSON: %s", a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return reflect.DeepEqual(x, y)
}
