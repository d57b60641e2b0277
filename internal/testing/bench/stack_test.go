package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry/export"
	"github.com/openwop/temporal-mcp/workflows"
)

// approvalTool waits for one approval, then completes in the workflow task
// that applied it: the tool of every row.
const approvalTool = "conformance-approval"

// shortTool is the example tool whose 5 ms runs the short-call row times.
const shortTool = "delay"

// startVariant is one way runs.Service.Start can answer tools/call.
type startVariant struct {
	name string
	opts runs.Options
}

// startVariants are the options measured for tools/call. The first is the
// stock server's (cmd/server sets EagerStart) and serves every other row.
var startVariants = []startVariant{
	{"answer once the run exists, eager start (stock server)", runs.Options{EagerStart: true}},
	{"answer once the run exists, not eager", runs.Options{}},
	{"answer after the first getRun, eager start", runs.Options{WaitFirstTask: true, EagerStart: true}},
	{"answer after the first getRun, not eager (before)", runs.Options{WaitFirstTask: true}},
}

// stack is the embedded stack the benchmark runs on: the embedded server
// on a SQLite file, one client (with a call-counting interceptor) shared
// by the in-process worker, the run services and the mounts, as in
// cmd/server.
//
// The benchmark's clients run in a process of their own (see
// TestBenchClientChild), as MCP clients and SDK programs do: there a stack
// holds only what a client has, its own Temporal client (for the raw SDK
// side, also counting its calls), the mounts' URLs and the URL of the
// server process's control endpoint (serveControl).
type stack struct {
	srv    *devtemporal.Server
	c      client.Client
	calls  *callLog
	tq     string
	spec   signals.ToolSpec
	caller signals.Subject
	// mounts are the MCP endpoints, one per startVariants entry.
	mounts []*mcpClient
	svc    *runs.Service
	reg    *workflows.Registry

	stopWorker context.CancelFunc
	workerDone chan error
	https      []*httptest.Server

	// control is, in the client process, the URL of the server process's
	// control endpoint ("" in the server process).
	control string
	// traced is, in the server process, the running tracedMount's stop
	// function (nil when none runs).
	traced func()
	// rawQueries, when set, records the latency of every raw getRun query.
	rawQueries atomic.Pointer[recorder]
}

// setCacheOnce applies the stock server's worker cache size to this
// process before its first worker starts.
var setCacheOnce sync.Once

func newStack(tb testing.TB, dir string, record bool) *stack {
	tb.Helper()
	return newStackWith(tb, dir, record, nil)
}

// newStackWith is newStack with an extra unary interceptor on the client.
func newStackWith(tb testing.TB, dir string, record bool, extra grpc.UnaryClientInterceptor) *stack {
	tb.Helper()
	setCacheOnce.Do(func() { worker.SetStickyWorkflowCacheSize(workflows.DefaultWorkflowCacheSize) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nop := zap.NewNop()
	srv, err := devtemporal.Start(ctx, devtemporal.Options{DBFile: filepath.Join(dir, "temporal.db")})
	if err != nil {
		tb.Fatalf("embedded server: %v", err)
	}
	s := &stack{srv: srv, tq: "bench", caller: auth.Anonymous()}
	tb.Cleanup(s.close)
	if record {
		s.calls = &callLog{byID: map[string][]string{}}
	}
	opts := client.Options{HostPort: srv.Address(), Namespace: srv.Namespace(), Logger: devtemporal.SDKLogger(nop)}
	// As config.Dial dials for cmd/server: requests not compressed.
	opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	var icpts []grpc.UnaryClientInterceptor
	if s.calls != nil {
		icpts = append(icpts, s.calls.intercept)
	}
	if extra != nil {
		icpts = append(icpts, extra)
	}
	if len(icpts) > 0 {
		opts.ConnectionOptions.DialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(icpts...)}
	}
	if s.c, err = client.DialContext(ctx, opts); err != nil {
		tb.Fatalf("dial: %v", err)
	}
	if s.reg, err = conformancetools.Registry(tools.NewActivities(nop, tools.ActivityOptions{OutputDir: filepath.Join(dir, "reports")})); err != nil {
		tb.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(context.Background())
	s.stopWorker, s.workerDone = stopWorker, make(chan error, 1)
	go func() { s.workerDone <- s.reg.Run(wctx, s.c, s.tq, workflows.WorkerOptions{}) }()

	live, err := catalog.NewLive(s.c, catalog.LiveOptions{Logger: nop})
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if err := live.Refresh(ctx); err == nil {
			if t, err := live.Lookup(ctx, approvalTool); err == nil {
				s.spec = t.Spec()
				break
			}
		}
		select {
		case err := <-s.workerDone:
			tb.Fatalf("worker: %v", err)
		case <-ctx.Done():
			tb.Fatal("the worker's tools never reached the catalog")
		case <-time.After(100 * time.Millisecond):
		}
	}
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	for i, v := range startVariants {
		o := v.opts
		o.TaskQueue, o.Namespace = s.tq, srv.Namespace()
		o.MaxTemporalCalls = envInt("OPENWOP_BENCH_MAXCALLS", 0)
		svc := runs.New(s.c, nop, o)
		if i == 0 {
			s.svc = svc
		}
		m, err := mcpmount.New(mcpmount.Options{Runs: svc, Catalog: live, Logger: nop})
		if err != nil {
			tb.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/mcp", m)
		hs := httptest.NewServer(mux)
		s.https = append(s.https, hs)
		s.mounts = append(s.mounts, &mcpClient{url: hs.URL + "/mcp", http: &http.Client{Transport: transport, Timeout: time.Minute}})
	}
	return s
}

// tracedTaskQueue is the task queue of the traced worker (tracedMount).
const tracedTaskQueue = "bench-traced"

// tracedMount has the server process start the traced mount
// (startTracedMount), through its control endpoint.
func (s *stack) tracedMount() (m *mcpClient, stop func(), err error) {
	var out struct{ URL string }
	if err := s.controlCall(http.MethodPost, "/traced", &out); err != nil {
		return nil, nil, err
	}
	stop = func() { _ = s.controlCall(http.MethodDelete, "/traced", nil) }
	return &mcpClient{url: out.URL, http: s.mcp().http}, stop, nil
}

// startTracedMount starts beside the stack what a process with tracing on
// runs, set up as cmd/server sets it up (telemetry/export): a second client
// with the Temporal tracing interceptor, a worker of the same tools on it
// (on a task queue of its own, so that no other row's run reaches it), and
// the stock mount with its TracerProvider set. The provider is the
// OpenTelemetry SDK's, sampling every span and exporting in batches to an
// exporter that drops them: all the work of tracing but the network.
// stop ends them all.
func (s *stack) startTracedMount(ctx context.Context) (m *mcpClient, stop func(), err error) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	tel := export.With(tp, nil)
	nop := zap.NewNop()
	opts := client.Options{HostPort: s.srv.Address(), Namespace: s.srv.Namespace(), Logger: devtemporal.SDKLogger(nop)}
	if s.calls != nil {
		opts.ConnectionOptions.DialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(s.calls.intercept)}
	}
	if err := tel.ClientOptions(&opts); err != nil {
		return nil, nil, err
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("dial the traced client: %w", err)
	}
	w := worker.New(c, tracedTaskQueue, worker.Options{})
	s.reg.Register(w)
	var hs *httptest.Server
	stop = func() {
		if hs != nil {
			hs.Close()
		}
		w.Stop()
		c.Close()
		_ = tel.Shutdown(context.Background())
	}
	spec := s.spec
	spec.TaskQueue = tracedTaskQueue
	cat, err := catalog.NewStatic(spec)
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	o := startVariants[0].opts
	o.TaskQueue, o.Namespace = tracedTaskQueue, s.srv.Namespace()
	svc := runs.New(c, nop, o)
	mnt, err := mcpmount.New(mcpmount.Options{Runs: svc, Catalog: cat, Logger: nop, TracerProvider: tel.TracerProvider(), RunTrace: svc.StartTrace})
	if err != nil {
		stop()
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mnt)
	hs = httptest.NewServer(mux)
	return &mcpClient{url: hs.URL + "/mcp", http: s.mcp().http}, stop, nil
}

// mcp is the default mount.
func (s *stack) mcp() *mcpClient { return s.mounts[0] }

func (s *stack) close() {
	for _, hs := range s.https {
		hs.Close()
	}
	if s.stopWorker != nil {
		s.stopWorker()
		select {
		case <-s.workerDone:
		case <-time.After(20 * time.Second):
		}
	}
	if s.c != nil {
		s.c.Close()
	}
	if s.srv != nil {
		_ = s.srv.Stop()
	}
}

// callsAbout returns the Temporal calls made about id: by the server
// process (the mounts) and by this one.
func (s *stack) callsAbout(id string) []string {
	server, here := s.callLists(id)
	return append(server, here...)
}

// callLists returns the Temporal calls made about id by the server
// process, as seen from the client process (none in the server process
// itself), and by this process.
func (s *stack) callLists(id string) (server, here []string) {
	if s.control != "" {
		if err := s.controlCall(http.MethodGet, "/calls?id="+url.QueryEscape(id), &server); err != nil {
			server = []string{"error: " + err.Error()}
		}
	}
	if s.calls != nil {
		here = s.calls.of(id)
	}
	return server, here
}

// callLog records the Temporal calls made about each workflow ID (calls
// that name no workflow, such as the worker's polls, are not recorded).
type callLog struct {
	mu   sync.Mutex
	byID map[string][]string
}

func (l *callLog) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if id := workflowIDOf(req); id != "" {
		l.mu.Lock()
		l.byID[id] = append(l.byID[id], path.Base(method))
		l.mu.Unlock()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// of returns the calls recorded for id.
func (l *callLog) of(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.byID[id]...)
}

// workflowIDOf is the workflow ID a WorkflowService request names.
func workflowIDOf(req any) string {
	switch r := req.(type) {
	case interface{ GetWorkflowId() string }:
		return r.GetWorkflowId()
	case interface {
		GetExecution() *commonpb.WorkflowExecution
	}:
		return r.GetExecution().GetWorkflowId()
	case interface {
		GetWorkflowExecution() *commonpb.WorkflowExecution
	}:
		return r.GetWorkflowExecution().GetWorkflowId()
	}
	return ""
}

// count counts calls by method, e.g. "QueryWorkflow×2 SignalWorkflowExecution".
func count(calls []string) string {
	n := map[string]int{}
	var order []string
	for _, c := range calls {
		if n[c] == 0 {
			order = append(order, c)
		}
		n[c]++
	}
	out := ""
	for i, c := range order {
		if i > 0 {
			out += " "
		}
		out += short(c)
		if n[c] > 1 {
			out += fmt.Sprintf("×%d", n[c])
		}
	}
	return out
}

// short abbreviates a WorkflowService method name.
func short(method string) string {
	switch method {
	case "StartWorkflowExecution":
		return "Start"
	case "QueryWorkflow":
		return "Query"
	case "DescribeWorkflowExecution":
		return "Describe"
	case "GetWorkflowExecutionHistory":
		return "History"
	case "SignalWorkflowExecution":
		return "Signal"
	case "RequestCancelWorkflowExecution":
		return "Cancel"
	}
	return method
}
