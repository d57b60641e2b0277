package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/grpc"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/upstream"
	"github.com/openwop/temporal-mcp/mcpcall/mcpcalltest"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/workflows"
)

// The front's cost (docs/benchmarks.md, "An upstream behind the front").
const (
	// frontSamples is the number of short calls on each side.
	frontSamples = 60
	// longCall is how long each side of the long-call row works.
	longCall = 20 * time.Second
)

// BenchmarkUpstreamFront measures what putting an MCP server behind the
// adapter costs, on the embedded Temporal server, with one worker of the
// upstreams' tools and a mount over real HTTP in this process:
//
//   - a short call (a go-sdk echo tool over streamable HTTP) as a blocking
//     MCP client makes it through the mount, interleaved call by call with
//     the same call made to the upstream directly by a go-sdk client and
//     with a tool of the adapter's own of the same shape (nativeEcho); the
//     front's time is split by the run's history (the MCP hop and run
//     start, the first workflow task, the activity with the upstream call,
//     the last workflow task, the result read);
//   - a long call's polling cost: the worker's Temporal calls (tasks
//     delivered to it and its answers, heartbeats) per minute while a run
//     follows a 2026-07-28 upstream task polled every second, against the
//     same length of a plain upstream's blocking call.
//
// Run it with -benchtime 1x: each iteration is the whole measurement.
func BenchmarkUpstreamFront(b *testing.B) {
	env := testenv.Temporal(b)
	f := newFrontBench(b, env)
	for i := 0; i < b.N; i++ {
		f.shortCalls(b)
		f.longCalls(b)
	}
}

// frontBench is the stack of BenchmarkUpstreamFront.
type frontBench struct {
	env     *testenv.Env
	prefix  string
	mount   string             // the mount's /mcp URL
	direct  *mcp.ClientSession // a client of the plain upstream
	tasks   *mcpcalltest.Server
	counter *callCounter // the worker's heartbeats
}

func newFrontBench(b *testing.B, env *testenv.Env) *frontBench {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{Echo: in.Text}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-time.After(longCall):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	b.Cleanup(srv.Close)
	tasks := mcpcalltest.NewServer(b)
	tasks.PollIntervalMs = 1000
	steps := make([]mcpcalltest.Step, int(longCall/time.Second))
	for i := range steps {
		steps[i] = mcpcalltest.Working("working")
	}
	tasks.Tool("long", append(steps, mcpcalltest.Text("done"))...)

	f := &frontBench{env: env, prefix: randomPrefix(), tasks: tasks, counter: &callCounter{}}
	file, err := upstream.Parse(fmt.Appendf(nil, `{"upstreams":[{"name":"plain","url":%q,"prefix":%q},{"name":"tasks","url":%q,"prefix":%q}]}`,
		srv.URL, f.prefix, tasks.URL, f.prefix), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set, err := upstream.Connect(ctx, file, upstream.Options{Logger: env.Logger})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = set.Close() })
	wc, err := client.DialContext(ctx, client.Options{HostPort: env.Address, Namespace: env.Namespace,
		Logger:            devtemporal.SDKLogger(env.Logger),
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithUnaryInterceptor(f.counter.intercept)}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(wc.Close)
	reg, err := workflows.NewRegistry(append(set.Tools(), nativeEcho(f.prefix+"native")), set.Activities(), &nativeActivities{})
	if err != nil {
		b.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(wctx, wc, testenv.UniqueTaskQueue(b), workflows.WorkerOptions{}) }()
	b.Cleanup(func() { stop(); <-done })

	f.mount = frontMount(b, env, wc)
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = direct.Close() })
	f.direct = direct
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := f.post("tools/call", f.prefix+"echo", map[string]any{"name": f.prefix + "echo", "arguments": map[string]any{"text": "warm"}}, blockingCaps); err == nil {
			break
		} else if time.Now().After(deadline) {
			b.Fatalf("the front does not serve %secho within a minute: %v", f.prefix, err)
		}
	}
	return f
}

// nativeEcho is a tool of the adapter's own with the shape of an upstream
// tool's run: one activity (nativeActivities.BenchEcho) that answers at
// once. It is the baseline of what any run costs.
func nativeEcho(name string) workflows.Tool {
	return workflows.NewTool(name, "Echoes its text in one activity.", func(ctx workflow.Context, in echoIn) (echoOut, error) {
		var out echoOut
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflows.DefaultActivityOptions()), "BenchEcho", in).Get(ctx, &out)
		return out, err
	})
}

// nativeActivities holds nativeEcho's activity.
type nativeActivities struct{}

// BenchEcho echoes its text.
func (*nativeActivities) BenchEcho(_ context.Context, in echoIn) (echoOut, error) {
	return echoOut{Echo: in.Text}, nil
}

// blockingCaps are a blocking client's: elicitation, so that the
// upstream's tools (which may ask) are called without the companion tools.
var blockingCaps = map[string]any{"elicitation": map[string]any{}}

// frontMount serves a mount of the live catalog on c, the worker's client
// (as the stock server's in-process worker shares its client, with eager
// starts), and returns its URL.
func frontMount(b *testing.B, env *testenv.Env, c client.Client) string {
	live, err := catalog.NewLive(c, catalog.LiveOptions{})
	if err != nil {
		b.Fatal(err)
	}
	m, err := mcpmount.New(mcpmount.Options{
		Runs:            runs.New(c, env.Logger, runs.Options{Namespace: env.Namespace, EagerStart: true}),
		Catalog:         live,
		Logger:          env.Logger,
		MaxBlockingWait: time.Minute,
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(m)
	b.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// post sends a 2026-07-28 request to the mount as a client of caps and
// returns its result.
func (f *frontBench) post(method, name string, params, caps map[string]any) (map[string]any, error) {
	if caps == nil {
		caps = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcpmount.ProtocolVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, f.mount, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcpmount.ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if i := bytes.LastIndex(raw, []byte("data: ")); i >= 0 { // an SSE stream: its last message
		raw = raw[i+len("data: "):]
	}
	var out struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Result == nil || out.Result["isError"] == true {
		return nil, fmt.Errorf("%s: HTTP %d %s", method, resp.StatusCode, raw)
	}
	return out.Result, nil
}

// shortCalls is the short-call row.
func (f *frontBench) shortCalls(b *testing.B) {
	ctx := context.Background()
	var direct, front, native []time.Duration
	var spans [][2]time.Time // each front call's send and receipt
	for i := range frontSamples {
		text := fmt.Sprintf("sample %d", i)
		start := time.Now()
		res, err := f.direct.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil || res.IsError {
			b.Fatalf("direct echo: %v %v", err, res)
		}
		direct = append(direct, time.Since(start))
		start = time.Now()
		out, err := f.post("tools/call", f.prefix+"echo", map[string]any{"name": f.prefix + "echo", "arguments": map[string]any{"text": text}}, blockingCaps)
		if err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		if sc, _ := json.Marshal(out["structuredContent"]); !strings.Contains(string(sc), text) {
			b.Fatalf("front echo = %v", out)
		}
		front = append(front, end.Sub(start))
		spans = append(spans, [2]time.Time{start, end})
		start = time.Now()
		out, err = f.post("tools/call", f.prefix+"native", map[string]any{"name": f.prefix + "native", "arguments": map[string]any{"text": text}}, blockingCaps)
		if err != nil {
			b.Fatal(err)
		}
		native = append(native, time.Since(start))
		if sc, _ := json.Marshal(out["structuredContent"]); !strings.Contains(string(sc), text) {
			b.Fatalf("native echo = %v", out)
		}
	}
	phases := f.phases(b, spans)
	md, mf := median(direct), median(front)
	fmt.Printf("\n| side | median ms | p90 ms | ratio |\n|---|---|---|---|\n"+
		"| upstream called directly (go-sdk client, streamable HTTP) | %.2f | %.2f | 1.00× |\n"+
		"| the same call through the front (blocking client) | %.2f | %.2f | %.2f× |\n"+
		"| a tool of the adapter's own that does the same in one activity (blocking client) | %.2f | %.2f | %.2f× |\n"+
		"added: %.2f ms (median), the front against the adapter's own tool %.2f×; the front's call by the run's history (medians, ms): %s",
		ms(md), ms(p90(direct)), ms(mf), ms(p90(front)), float64(mf)/float64(md),
		ms(median(native)), ms(p90(native)), float64(median(native))/float64(md), ms(mf-md), float64(mf)/float64(median(native)), phases)
	fmt.Println()
	b.ReportMetric(float64(mf)/float64(md), "front/direct")
	b.ReportMetric(ms(mf-md), "added-ms")
	b.ReportMetric(float64(mf)/float64(median(native)), "front/native")
}

// phases splits the front's calls (their send and receipt times) by the
// events of their runs' histories, and returns the medians of each part.
func (f *frontBench) phases(b *testing.B, spans [][2]time.Time) string {
	ctx := context.Background()
	var runs []string
	query := fmt.Sprintf("WorkflowType = '%secho'", f.prefix)
	for deadline := time.Now().Add(time.Minute); len(runs) < len(spans); time.Sleep(200 * time.Millisecond) {
		runs = runs[:0]
		var token []byte
		for {
			resp, err := f.env.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: f.env.Namespace, Query: query, NextPageToken: token})
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range resp.GetExecutions() {
				runs = append(runs, e.GetExecution().GetWorkflowId())
			}
			if token = resp.GetNextPageToken(); len(token) == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("visibility lists %d runs of echo, want %d", len(runs), len(spans))
		}
	}
	names := []string{"MCP hop and run start", "first workflow task", "activity (the upstream call)", "last workflow task", "result read"}
	parts := make([][]time.Duration, len(names))
	for _, id := range runs {
		var t [4]time.Time // started, activity scheduled, activity completed, run closed
		it := f.env.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				b.Fatal(err)
			}
			at := ev.GetEventTime().AsTime()
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				t[0] = at
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				t[1] = at
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				t[2] = at
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
				t[3] = at
			}
		}
		i := slices.IndexFunc(spans, func(s [2]time.Time) bool { return !t[0].Before(s[0]) && !t[0].After(s[1]) })
		if i < 0 {
			continue // the warm-up call
		}
		s := spans[i]
		for j, d := range []time.Duration{t[0].Sub(s[0]), t[1].Sub(t[0]), t[2].Sub(t[1]), t[3].Sub(t[2]), s[1].Sub(t[3])} {
			parts[j] = append(parts[j], d)
		}
	}
	var out []string
	for j, n := range names {
		out = append(out, fmt.Sprintf("%s %.2f", n, ms(median(parts[j]))))
	}
	return strings.Join(out, ", ") + fmt.Sprintf(" (%d runs)", len(parts[0]))
}

// longCalls is the long-call row: the Temporal calls of the worker for
// one run that follows an upstream task, then for one run that waits on a
// blocking call of the same length. The caller waits for each run's end
// on the Temporal client of its own (a long poll of the history), not
// with tasks/get, whose queries would be the worker's work too.
func (f *frontBench) longCalls(b *testing.B) {
	ctx := context.Background()
	taskCaps := map[string]any{"extensions": map[string]any{mcpmount.ExtensionTasks: map[string]any{}}}
	gets := func() int {
		n := 0
		for _, r := range f.tasks.Requests() {
			if r.Method == "tasks/get" {
				n++
			}
		}
		return n
	}
	var lines []string
	var perMin [2]float64
	for i, tool := range []string{"long", "sleep"} {
		beats, got := f.counter.count(), gets()
		start := time.Now()
		res, err := f.post("tools/call", f.prefix+tool, map[string]any{"name": f.prefix + tool, "arguments": map[string]any{}}, taskCaps)
		if err != nil {
			b.Fatal(err)
		}
		id, err := runid.Unproject(fmt.Sprint(res["taskId"]))
		if err != nil {
			b.Fatalf("tools/call %s = %v: %v", tool, res, err)
		}
		if err := f.env.Client.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
			b.Fatalf("run of %s: %v", tool, err)
		}
		took := time.Since(start)
		beats = f.counter.count() - beats
		wft, acts, events := f.tasksOf(b, id)
		calls := 2*(wft+acts) + beats // a poll that delivers each task and its answer, and the heartbeats
		perMin[i] = float64(calls) / took.Minutes()
		lines = append(lines, fmt.Sprintf("| %s | %.1f s | %d | %d | %d | %d | %d (%.1f/min) | %d |",
			tool, took.Seconds(), gets()-got, wft, acts, beats, calls, perMin[i], events))
	}
	fmt.Printf("\n| call | length | upstream tasks/get | workflow tasks | activity tasks | heartbeats | worker's Temporal calls | history events |\n"+
		"|---|---|---|---|---|---|---|---|\n%s\nfollowed task against blocking call: %.2f×", strings.Join(lines, "\n"), perMin[0]/perMin[1])
	fmt.Println()
	b.ReportMetric(perMin[0], "followed-calls/min")
	b.ReportMetric(perMin[1], "blocking-calls/min")
}

// tasksOf counts the workflow tasks and activity tasks of a run, and its
// history events.
func (f *frontBench) tasksOf(b *testing.B, id string) (workflowTasks, activityTasks, events int) {
	it := f.env.Client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		events++
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			workflowTasks++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			activityTasks++
		}
	}
	return workflowTasks, activityTasks, events
}

// callCounter counts a Temporal client's activity heartbeats.
type callCounter struct {
	mu    sync.Mutex
	beats int
}

func (c *callCounter) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if strings.Contains(method, "/RecordActivityTaskHeartbeat") {
		c.mu.Lock()
		c.beats++
		c.mu.Unlock()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *callCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.beats
}

func median(d []time.Duration) time.Duration { return quantile(d, 0.5) }
func p90(d []time.Duration) time.Duration    { return quantile(d, 0.9) }

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(d))
	return s[int(q*float64(len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
