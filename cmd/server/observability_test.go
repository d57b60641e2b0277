package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/telemetry"
	"github.com/openwop/temporal-mcp/telemetry/export"
)

// observed is the server's assembly on the shared test Temporal with an
// in-memory span exporter, the Prometheus endpoint on and every log line
// recorded.
type observed struct {
	app   *app.App
	spans *tracetest.InMemoryExporter
	logs  *observer.ObservedLogs
	tq    string
}

func startObserved(t *testing.T) *observed {
	t.Helper()
	env := testenv.Temporal(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	core, logs := observer.New(zapcore.DebugLevel)
	logger := zap.New(zapcore.NewTee(core, testenv.Logger().Core()))
	metrics, err := export.NewMetrics(export.MetricsOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	cfg := config.Config{
		HTTPAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", TaskQueue: tq, Worker: true, Remote: true,
		Client: client.Options{HostPort: env.Address, Namespace: env.Namespace},
	}
	acts := tools.NewActivities(logger.Named("activities"), tools.ActivityOptions{
		OutputDir: t.TempDir(), SectionDelay: time.Millisecond, HeartbeatInterval: 200 * time.Millisecond,
	})
	reg, err := tools.DefaultRegistry(acts)
	if err != nil {
		t.Fatal(err)
	}
	// Every read is a Temporal call here (no reuse within a read window),
	// so that each tasks/get shows its getRun query span.
	ad, err := app.NewServer(app.ServerOptions{Registry: reg, Authenticate: auth.AnonymousAuthenticator, ReadWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	parts := ad.Parts()
	parts.Telemetry = export.With(tp, metrics)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.Start(ctx, cfg, logger, parts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	if a.MetricsAddr == "" {
		t.Fatal("no metrics listener")
	}
	return &observed{app: a, spans: spans, logs: logs, tq: tq}
}

// traceParent is a W3C traceparent of a new trace, and its trace id.
func traceParent(t *testing.T, n int) (string, trace.TraceID) {
	t.Helper()
	hex := fmt.Sprintf("%032x", 0xa11ce0000+n)
	tid, err := trace.TraceIDFromHex(hex)
	if err != nil {
		t.Fatal(err)
	}
	return "00-" + hex + "-00f067aa0ba902b7-01", tid
}

// meta is the _meta of a 2026-07-28 request with the given capabilities
// and, when not "", a traceparent.
func meta(caps map[string]any, traceparent string) map[string]any {
	m := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	if traceparent != "" {
		m["traceparent"] = traceparent
	}
	return m
}

var (
	taskCaps = map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	formCaps = map[string]any{"elicitation": map[string]any{}}
)

// body is a 2026-07-28 request body and its headers.
func request(method, name string, params, m map[string]any) ([]byte, http.Header) {
	params = maps.Clone(params)
	params["_meta"] = m
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	return body, h
}

// call posts a request and returns its result object.
func (o *observed) call(t *testing.T, method, name string, params, m map[string]any) map[string]any {
	t.Helper()
	return o.callHeader(t, method, name, params, m, "")
}

// callHeader is call with a traceparent header (when not "").
func (o *observed) callHeader(t *testing.T, method, name string, params, m map[string]any, traceparent string) map[string]any {
	t.Helper()
	body, h := request(method, name, params, m)
	req, _ := http.NewRequest(http.MethodPost, "http://"+o.app.HTTPAddr+"/mcp", bytes.NewReader(body))
	req.Header = h
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var r struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &r); err != nil || r.Result == nil {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, raw)
	}
	return r.Result
}

// waitTask polls tasks/get until the task has status want; it returns the
// task and the number of tasks/get sent.
func (o *observed) waitTask(t *testing.T, taskID, want string) (map[string]any, int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for n := 1; ; n++ {
		res := o.call(t, "tasks/get", taskID, map[string]any{"taskId": taskID}, meta(taskCaps, ""))
		if res["status"] == want {
			return res, n
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is not %s: %v", taskID, want, res)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scrape reads the Prometheus endpoint.
func (o *observed) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + o.app.MetricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value is the value of the series of family name whose labels include
// labels (summed over the series that match; counters, gauges, and the
// sample count of histograms).
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	var sum float64
	found := false
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, found
}

// waitMetric scrapes until the series has value want.
func (o *observed) waitMetric(t *testing.T, name string, labels map[string]string, want float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, _ := value(o.scrape(t), name, labels)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lifecycle is what one agent session did, for the assertions.
type lifecycle struct {
	traceCall, traceUpdate, traceREST, traceHeader trace.TraceID
	gets                                           int
}

// runLifecycle drives the adapter through a whole agent session: a task
// (publish_report: an activity, an approval answered by tasks/update,
// another activity), a refused request, a blocking call that asks for
// input (MRTR), and a blocking call whose client disconnects (ownership
// cancellation).
func (o *observed) runLifecycle(t *testing.T) lifecycle {
	t.Helper()
	var lc lifecycle
	var tpCall, tpUpdate, tpMRTR, tpGone string
	tpCall, lc.traceCall = traceParent(t, 1)
	tpUpdate, lc.traceUpdate = traceParent(t, 2)
	tpMRTR, _ = traceParent(t, 3)
	tpGone, _ = traceParent(t, 4)

	// 1. The task.
	created := o.call(t, "tools/call", "publish_report", map[string]any{"name": "publish_report",
		"arguments": map[string]any{"title": "Q3", "topic": "sales", "sections": 1}}, meta(taskCaps, tpCall))
	taskID, _ := created["taskId"].(string)
	if created["resultType"] != "task" || taskID == "" {
		t.Fatalf("tools/call = %v, want a task", created)
	}
	waiting, n := o.waitTask(t, taskID, "input_required")
	lc.gets += n
	var tpHeader string
	tpHeader, lc.traceHeader = traceParent(t, 6)
	o.callHeader(t, "tasks/get", taskID, map[string]any{"taskId": taskID}, meta(taskCaps, ""), tpHeader)
	lc.gets++
	var key string
	for k := range waiting["inputRequests"].(map[string]any) {
		key = k
	}
	ack := o.call(t, "tasks/update", taskID, map[string]any{"taskId": taskID, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept"}}}, meta(taskCaps, tpUpdate))
	if ack["resultType"] != "complete" {
		t.Fatalf("tasks/update = %v", ack)
	}
	_, n = o.waitTask(t, taskID, "completed")
	lc.gets += n

	// 2. A refused request (no JSON content type).
	resp, err := http.Post("http://"+o.app.HTTPAddr+"/mcp", "text/plain", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain POST = %d, want 415", resp.StatusCode)
	}

	// 3. A blocking call that asks for input.
	mrtr := o.call(t, "tools/call", "publish_report", map[string]any{"name": "publish_report",
		"arguments": map[string]any{"title": "Q4", "topic": "costs", "sections": 1}}, meta(formCaps, tpMRTR))
	if mrtr["resultType"] != "input_required" {
		t.Fatalf("blocking call = %v, want input_required", mrtr)
	}

	// 4. A blocking call whose client goes away while it waits.
	body, h := request("tools/call", "delay", map[string]any{"name": "delay",
		"arguments": map[string]any{"delayMs": 600000}}, meta(map[string]any{}, tpGone))
	h.Set("Accept", "text/event-stream, application/json") // an SSE stream
	conn, err := net.Dial("tcp", o.app.HTTPAddr)
	if err != nil {
		t.Fatal(err)
	}
	var raw strings.Builder
	fmt.Fprintf(&raw, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", o.app.HTTPAddr, len(body))
	for k, vs := range h {
		fmt.Fprintf(&raw, "%s: %s\r\n", k, vs[0])
	}
	raw.WriteString("\r\n")
	raw.Write(body)
	if _, err := io.WriteString(conn, raw.String()); err != nil {
		t.Fatal(err)
	}
	o.waitMetric(t, export.MetricBlockingCalls, nil, 1)
	o.waitMetric(t, export.MetricSSEStreams, nil, 1)
	conn.Close()
	o.waitMetric(t, export.MetricOwnershipCancels, nil, 1)
	o.waitMetric(t, export.MetricBlockingCalls, nil, 0)
	o.waitMetric(t, export.MetricSSEStreams, nil, 0)

	// 5. The run over REST.
	var tpREST string
	tpREST, lc.traceREST = traceParent(t, 5)
	rreq, _ := http.NewRequest(http.MethodGet, "http://"+o.app.HTTPAddr+"/runs/"+taskID, nil)
	rreq.Header.Set("traceparent", tpREST)
	rresp, err := http.DefaultClient.Do(rreq)
	if err != nil {
		t.Fatal(err)
	}
	rresp.Body.Close()
	if rresp.StatusCode != http.StatusOK {
		t.Fatalf("GET /runs/%s = %d", taskID, rresp.StatusCode)
	}
	return lc
}

// TestMetricsScrape: after a whole agent session, the Prometheus endpoint
// shows the mount's counters with the values the session implies, and the
// Temporal SDK's metrics of the in-process worker.
func TestMetricsScrape(t *testing.T) {
	o := startObserved(t)
	lc := o.runLifecycle(t)
	fams := o.scrape(t)
	req := func(method, outcome string) map[string]string {
		return map[string]string{"method": method, "outcome": outcome}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{export.MetricRequests, req("tools/call", "task"), 1},
		{export.MetricRequests, req("tasks/get", "ok"), float64(lc.gets)},
		{export.MetricRequests, req("tasks/update", "ok"), 1},
		{export.MetricRequests, req("tools/call", "input_required"), 1},
		{export.MetricRequests, req("tools/call", "cancelled"), 1},
		{export.MetricRequests, req("unknown", "rejected"), 1},
		{export.MetricRequests, req("tools/call", "ok"), 0},
		{export.MetricRequestDuration, req("tasks/get", "ok"), float64(lc.gets)},
		{export.MetricMRTRRounds, nil, 1},
		{export.MetricOwnershipCancels, nil, 1},
		{export.MetricBlockingCalls, nil, 0},
		{export.MetricSSEStreams, nil, 0},
		// The Temporal SDK's metrics of the in-process worker.
		{"temporal_workflow_completed_total", map[string]string{"task_queue": o.tq, "workflow_type": "publish_report"}, 1},
		{"temporal_activity_execution_latency_seconds", map[string]string{"task_queue": o.tq, "activity_type": "PublishReport"}, 1},
	} {
		got, _ := value(fams, c.name, c.labels)
		if got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if t.Failed() {
		var names []string
		for n := range fams {
			names = append(names, n)
		}
		t.Logf("families: %v", names)
	}
}

// spanIndex finds spans by name within one trace.
type spanIndex []tracetest.SpanStub

func (s spanIndex) find(t *testing.T, tid trace.TraceID, name string) tracetest.SpanStub {
	t.Helper()
	for _, sp := range s {
		if sp.SpanContext.TraceID() == tid && sp.Name == name {
			return sp
		}
	}
	var names []string
	for _, sp := range s {
		if sp.SpanContext.TraceID() == tid {
			names = append(names, sp.Name)
		}
	}
	t.Fatalf("no span %q in trace %s; it has %v", name, tid, names)
	return tracetest.SpanStub{}
}

func wantParent(t *testing.T, child, parent tracetest.SpanStub) {
	t.Helper()
	if child.Parent.SpanID() != parent.SpanContext.SpanID() {
		t.Errorf("span %q has parent %s, want %q (%s)", child.Name, child.Parent.SpanID(), parent.Name, parent.SpanContext.SpanID())
	}
}

// TestTraceEndToEnd: the traceparent an agent sends in _meta parents the
// span of its tools/call, and the workflow start, the workflow, its
// activities and its approval are spans of that trace with the right
// parents; the later tasks/update (its own trace) links to it, and its
// signal to the run is a child of its span.
func TestTraceEndToEnd(t *testing.T) {
	o := startObserved(t)
	lc := o.runLifecycle(t)
	spans := spanIndex(o.spans.GetSpans())

	call := spans.find(t, lc.traceCall, "tools/call publish_report")
	if got := call.Parent.SpanID().String(); got != "00f067aa0ba902b7" || !call.Parent.IsRemote() {
		t.Errorf("tools/call span parent = %s (remote %v), want the client's span 00f067aa0ba902b7", got, call.Parent.IsRemote())
	}
	if call.SpanKind != trace.SpanKindServer {
		t.Errorf("tools/call span kind = %v", call.SpanKind)
	}
	start := spans.find(t, lc.traceCall, "StartWorkflow:publish_report")
	wantParent(t, start, call)
	run := spans.find(t, lc.traceCall, "RunWorkflow:publish_report")
	wantParent(t, run, start)
	for _, act := range []string{"GenerateReport", "PublishReport"} {
		sa := spans.find(t, lc.traceCall, "StartActivity:"+act)
		wantParent(t, sa, run)
		wantParent(t, spans.find(t, lc.traceCall, "RunActivity:"+act), sa)
	}
	wantParent(t, spans.find(t, lc.traceCall, "Interrupt:review"), run)

	update := spans.find(t, lc.traceUpdate, "tasks/update")
	linked := false
	for _, l := range update.Links {
		if l.SpanContext.TraceID() == lc.traceCall && l.SpanContext.SpanID() == call.SpanContext.SpanID() {
			linked = true
		}
	}
	if !linked {
		t.Errorf("tasks/update links %v, want the tools/call span %s", update.Links, call.SpanContext.SpanID())
	}
	signal := spans.find(t, lc.traceUpdate, "SignalWorkflow:resolveInterrupt")
	wantParent(t, signal, update)
	wantParent(t, spans.find(t, lc.traceUpdate, "HandleSignal:resolveInterrupt"), signal)

	// An MCP request without a traceparent in _meta takes its HTTP
	// header's; the getRun query it sends is a span below it, handled on
	// the worker in a span below that.
	get := spans.find(t, lc.traceHeader, "tasks/get")
	if got := get.Parent.SpanID().String(); got != "00f067aa0ba902b7" || !get.Parent.IsRemote() {
		t.Errorf("tasks/get span parent = %s, want the header's span", got)
	}
	query := spans.find(t, lc.traceHeader, "QueryWorkflow:getRun")
	wantParent(t, query, get)
	wantParent(t, spans.find(t, lc.traceHeader, "HandleQuery:getRun"), query)

	// REST: the traceparent header parents the request's span, the run
	// service's Temporal calls are its children, and it links to the
	// run's trace.
	rest := spans.find(t, lc.traceREST, "GET /runs/{runId}")
	if got := rest.Parent.SpanID().String(); got != "00f067aa0ba902b7" {
		t.Errorf("REST span parent = %s, want the client's span", got)
	}
	for _, sp := range spans {
		if sp.SpanContext.TraceID() == lc.traceREST && sp.Name != rest.Name {
			wantParent(t, sp, rest)
		}
	}
	if len(rest.Links) != 1 || rest.Links[0].SpanContext.SpanID() != call.SpanContext.SpanID() {
		t.Errorf("REST span links %v, want the tools/call span %s", rest.Links, call.SpanContext.SpanID())
	}
}

// TestRunLogFields: every log line about a run carries its runId, tenant,
// tool and trace id.
func TestRunLogFields(t *testing.T) {
	o := startObserved(t)
	o.runLifecycle(t)
	// The ownership cancellation's last lines are written after the
	// metric moved.
	time.Sleep(200 * time.Millisecond)
	about := 0
	for _, e := range o.logs.All() {
		fields := e.ContextMap()
		if _, ok := fields[telemetry.FieldRunID]; !ok {
			continue
		}
		about++
		for _, k := range []string{telemetry.FieldRunID, telemetry.FieldTenant, telemetry.FieldTool, telemetry.FieldTraceID} {
			if v, _ := fields[k].(string); v == "" {
				t.Errorf("%s line %q (%s): %s is %v", e.Level, e.Message, e.LoggerName, k, fields[k])
			}
		}
	}
	// run started x3, the ownership cancellation (2 lines) and its cancel
	// request at least.
	if about < 6 {
		t.Errorf("%d log lines about runs, want at least 6", about)
		for _, e := range o.logs.All() {
			t.Logf("%s %s %v", e.LoggerName, e.Message, e.ContextMap())
		}
	}
}
