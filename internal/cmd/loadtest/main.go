package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

func main() {
	o := options{}
	flag.IntVar(&o.clients, "clients", 200, "concurrent MCP clients")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "load phase; the kills happen at 1/4, 2/4 and 3/4 of it")
	flag.DurationVar(&o.drain, "drain", 3*time.Minute, "time allowed after the load phase for every lifecycle to finish")
	flag.StringVar(&o.dir, "dir", "", "work directory (binaries, SQLite file, logs); default a new temporary one")
	flag.StringVar(&o.kills, "kill", "server,worker,temporal", "processes to kill -9 and restart during the load, in order (empty: none)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

type options struct {
	clients         int
	duration, drain time.Duration
	dir, kills      string
}

func run(o options) error {
	if o.dir == "" {
		d, err := os.MkdirTemp("", "openwop-loadtest-")
		if err != nil {
			return err
		}
		o.dir = d
	}
	fmt.Println("work directory:", o.dir)
	if err := prepare(o.dir); err != nil {
		return err
	}
	d, err := newDeployment(o.dir)
	if err != nil {
		return err
	}
	defer d.stop()
	for _, name := range []string{"temporal", "worker", "server"} {
		if err := d.start(name); err != nil {
			return err
		}
	}
	fmt.Printf("three processes ready: Temporal %s, server %s; %d clients for %s\n", d.temporalAddr, d.base, o.clients, o.duration)

	st := &stats{}
	loadEnd := time.Now().Add(o.duration)
	drainEnd := loadEnd.Add(o.drain)
	var wg sync.WaitGroup
	clients := make([]*mcpClient, o.clients)
	for i := range clients {
		c := &mcpClient{url: d.base + "/mcp", st: st, idx: i, drainEnd: drainEnd}
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.loop(loadEnd)
		}()
	}
	if err := d.killInTurn(o.kills, loadEnd, o.duration); err != nil {
		return err
	}
	wg.Wait()
	fmt.Printf("%s load done; auditing\n", time.Now().Format(time.TimeOnly))
	return audit(d.temporalAddr, clients, st)
}

// prepare builds the three binaries into dir (once) and removes the
// database and logs of an earlier run: the audit counts every run in
// Temporal.
func prepare(dir string) error {
	for _, b := range [][2]string{{"devserver", "./internal/cmd/devserver"}, {"worker", "./cmd/worker"}, {"server", "./cmd/server"}} {
		out := filepath.Join(dir, b[0])
		if _, err := os.Stat(out); err == nil {
			continue
		}
		fmt.Println("building", b[1])
		cmd := exec.Command("go", "build", "-o", out, b[1])
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", b[1], err)
		}
	}
	for _, f := range []string{"temporal.db", "temporal.db-wal", "temporal.db-shm", "temporal.log", "worker.log", "server.log"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// deployment is the processes of one load test (Temporal, a worker, a
// mount-only server) and how to tell each is ready.
type deployment struct {
	temporalAddr, base string
	procs              map[string]*proc
	ready              map[string]func(context.Context) error
}

// newDeployment lays out the processes on free loopback ports; none runs
// yet.
func newDeployment(dir string) (*deployment, error) {
	tport, err := freePort()
	if err != nil {
		return nil, err
	}
	hport, err := freePort()
	if err != nil {
		return nil, err
	}
	d := &deployment{temporalAddr: fmt.Sprintf("127.0.0.1:%d", tport), base: fmt.Sprintf("http://127.0.0.1:%d", hport)}
	remote := []string{"TEMPORAL_ADDRESS=" + d.temporalAddr, "OPENWOP_FIXTURES=on", "OPENWOP_DATA_DIR=" + dir, "OPENWOP_LOG_LEVEL=warn"}
	d.procs = map[string]*proc{
		"temporal": {name: "temporal", dir: dir, bin: filepath.Join(dir, "devserver"),
			args: []string{"-db", filepath.Join(dir, "temporal.db"), "-port", strconv.Itoa(tport)}},
		"worker": {name: "worker", dir: dir, bin: filepath.Join(dir, "worker"), env: remote},
		"server": {name: "server", dir: dir, bin: filepath.Join(dir, "server"),
			env: append([]string{"OPENWOP_WORKER=off", "OPENWOP_HTTP_ADDR=127.0.0.1:" + strconv.Itoa(hport)}, remote...)},
	}
	d.ready = map[string]func(context.Context) error{
		"temporal": func(ctx context.Context) error { return temporalReady(ctx, d.temporalAddr) },
		"worker":   func(ctx context.Context) error { return nil }, // the server's readiness covers it
		"server":   func(ctx context.Context) error { return serverReady(ctx, d.base) },
	}
	return d, nil
}

// start starts the named process and waits until it is ready.
func (d *deployment) start(name string) error {
	p := d.procs[name]
	if err := p.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := d.ready[name](ctx); err != nil {
		return fmt.Errorf("%s not ready: %w (see %s)", name, err, p.logFile())
	}
	return nil
}

// stop stops every process.
func (d *deployment) stop() {
	for _, p := range d.procs {
		p.stop()
	}
}

// killInTurn kills -9 the processes named in kills (comma-separated), one
// at a time spread over the load phase that ends at loadEnd, and restarts
// each.
func (d *deployment) killInTurn(kills string, loadEnd time.Time, duration time.Duration) error {
	if kills == "" {
		return nil
	}
	names := strings.Split(kills, ",")
	for i, name := range names {
		p, ok := d.procs[name]
		if !ok {
			return fmt.Errorf("-kill: unknown process %q (server, worker, temporal)", name)
		}
		at := time.Duration(i+1) * duration / time.Duration(len(names)+1)
		time.Sleep(time.Until(loadEnd.Add(-duration + at)))
		fmt.Printf("%s kill -9 %s (pid %d)\n", time.Now().Format(time.TimeOnly), name, p.pid())
		p.kill()
		time.Sleep(time.Second)
		if err := d.start(name); err != nil {
			return fmt.Errorf("after restart: %w", err)
		}
		fmt.Printf("%s %s restarted\n", time.Now().Format(time.TimeOnly), name)
	}
	return nil
}

// proc is one process of the deployment.
type proc struct {
	name, dir, bin string
	args, env      []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exited
}

func (p *proc) logFile() string { return filepath.Join(p.dir, p.name+".log") }

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.logFile(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	p.cmd, p.done = cmd, done
	return nil
}

func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// kill sends SIGKILL.
func (p *proc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		p.cmd = nil
	}
}

// stop sends SIGTERM and waits a little, then SIGKILL.
func (p *proc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func temporalReady(ctx context.Context, addr string) error {
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: quietLogger{}})
		if err == nil {
			_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
			c.Close()
			if err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// serverReady waits for /healthz and for the worker's tools in tools/list.
func serverReady(ctx context.Context, base string) error {
	c := &mcpClient{url: base + "/mcp", st: &stats{}}
	for {
		var err error
		var r rpcAnswer
		if r, err = c.call(ctx, "tools/list", map[string]any{}); err == nil {
			if bytes.Contains(r.raw, []byte(`"confirm_delete"`)) {
				return nil
			}
			err = fmt.Errorf("tools/list: %s", r.raw)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// stats are the figures of every request.
type stats struct {
	mu        sync.Mutex
	latencies []time.Duration
	status    map[int]int
	// byMethod counts the answers by method and HTTP status (0: no answer).
	byMethod  map[string]int
	transport int // requests that got no HTTP answer
	samples   map[string]string
	methodLat map[string][]time.Duration
	overload  int // 503 overloaded
}

func (s *stats) record(method string, d time.Duration, status int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status == nil {
		s.status, s.byMethod = map[int]int{}, map[string]int{}
	}
	s.byMethod[fmt.Sprintf("%s %d", method, status)]++
	if s.methodLat == nil {
		s.methodLat = map[string][]time.Duration{}
	}
	if err == nil && status < 500 {
		s.methodLat[method] = append(s.methodLat[method], d)
	}
	if err != nil {
		s.transport++
		return
	}
	s.status[status]++
	if status < 500 {
		s.latencies = append(s.latencies, d)
	}
}

// sample keeps the first answer of each method and non-200 status.
func (s *stats) sample(method string, status int, raw []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples == nil {
		s.samples = map[string]string{}
	}
	k := fmt.Sprintf("%s %d", method, status)
	if _, ok := s.samples[k]; !ok {
		s.samples[k] = string(raw)
	}
}

// mcpClient is one client: its lifecycles and the runs it holds.
type mcpClient struct {
	url      string
	st       *stats
	idx      int
	drainEnd time.Time
	id       int
	http     http.Client

	// runs maps each run id the client was handed to its intent (the
	// filename), finals its last status as the client saw it.
	runs   map[string]string
	finals map[string]string
	// intents counts the lifecycles started; unfinished those not
	// finished by the drain deadline.
	intents, unfinished int
}

type rpcAnswer struct {
	status int
	header http.Header
	raw    []byte
	result map[string]any
	err    *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
}

var capsTasks = map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}

// call sends one 2026-07-28 request.
func (c *mcpClient) call(ctx context.Context, method string, params map[string]any) (rpcAnswer, error) {
	c.id++
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "loadtest", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": capsTasks,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return rpcAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	for _, k := range []string{"name", "taskId"} {
		if v, ok := params[k].(string); ok {
			req.Header.Set("Mcp-Name", v)
		}
	}
	began := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		c.st.record(method, 0, 0, err)
		return rpcAnswer{}, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.st.record(method, time.Since(began), resp.StatusCode, err)
	if err != nil {
		return rpcAnswer{}, err
	}
	a := rpcAnswer{status: resp.StatusCode, header: resp.Header, raw: raw}
	var env struct {
		Result map[string]any `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusOK {
		c.st.sample(method, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return a, fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	a.result, a.err = env.Result, env.Error
	if resp.StatusCode == http.StatusServiceUnavailable {
		c.st.mu.Lock()
		c.st.overload++
		c.st.mu.Unlock()
	}
	return a, nil
}

// retry calls until the request gets a JSON-RPC answer that ok accepts,
// or the drain deadline passes, backing off on transport errors, 5xx and
// overload refusals.
func (c *mcpClient) retry(method string, params func() map[string]any, ok func(rpcAnswer) bool) (rpcAnswer, bool) {
	pause := 100 * time.Millisecond
	for time.Now().Before(c.drainEnd) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		a, err := c.call(ctx, method, params())
		cancel()
		if err == nil && ok(a) {
			return a, true
		}
		wait := pause
		if s := a.header.Get("Retry-After"); s != "" {
			if n, err := strconv.Atoi(s); err == nil {
				wait = time.Duration(n) * time.Second
			}
		}
		time.Sleep(wait + time.Duration(rand.Int64N(int64(pause))))
		pause = min(2*pause, 2*time.Second)
	}
	return rpcAnswer{}, false
}

// loop runs lifecycles until loadEnd, then finishes the one in progress.
func (c *mcpClient) loop(loadEnd time.Time) {
	c.runs, c.finals = map[string]string{}, map[string]string{}
	for iter := 0; time.Now().Before(loadEnd); iter++ {
		c.intents++
		if !c.lifecycle(fmt.Sprintf("c%d-%d.txt", c.idx, iter)) {
			c.unfinished++
		}
	}
}

// lifecycle runs one intent to its end; false when it did not finish.
func (c *mcpClient) lifecycle(intent string) bool {
	a, ok := c.retry("tools/call", func() map[string]any {
		return map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": intent}}
	}, func(a rpcAnswer) bool { return a.err == nil && a.result["taskId"] != nil })
	if !ok {
		return false
	}
	taskID, _ := a.result["taskId"].(string)
	runID := rawRunID(taskID)
	c.runs[runID] = intent
	get := func() map[string]any { return map[string]any{"taskId": taskID} }
	for {
		a, ok = c.retry("tasks/get", get, func(a rpcAnswer) bool {
			s, _ := a.result["status"].(string)
			return a.err == nil && (s == "input_required" || s == "completed" || s == "failed" || s == "cancelled")
		})
		if !ok {
			return false
		}
		status, _ := a.result["status"].(string)
		c.finals[runID] = status
		if status != "input_required" {
			return status == "completed"
		}
		reqs, _ := a.result["inputRequests"].(map[string]any)
		responses := map[string]any{}
		for k := range reqs {
			responses[k] = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
		}
		// An update that is answered "already resolved" after a retry
		// whose first attempt got through is fine: tasks/get tells.
		c.retry("tasks/update", func() map[string]any {
			return map[string]any{"taskId": taskID, "inputResponses": responses}
		}, func(a rpcAnswer) bool { return a.status < 500 && (a.err == nil || a.err.Code == -32602) })
	}
}

// rawRunID turns a projected task id into the run id.
func rawRunID(taskID string) string {
	id, err := runid.Parse(taskID)
	if err != nil {
		return taskID
	}
	return id
}

var deleted = regexp.MustCompile(`Deleted ([^"\\ ]+)\.`)

// audit lists every workflow and compares with what the clients hold.
func audit(addr string, clients []*mcpClient, st *stats) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer c.Close()
	held := map[string]string{} // run id -> intent
	intents, unfinished := 0, 0
	for _, cl := range clients {
		for id, in := range cl.runs {
			held[id] = in
		}
		intents += cl.intents
		unfinished += cl.unfinished
	}
	all, err := settledRuns(ctx, c, clients)
	if err != nil {
		return err
	}
	f := compare(ctx, c, held, all)
	fmt.Printf("lifecycles started %d, unfinished %d; runs held by clients %d, workflows in Temporal %d (cancelled, held by no client: %d)\n",
		intents, unfinished, len(held), len(all), f.cancelledUnheld)
	fivexx := st.report()
	fmt.Printf("lost %d, duplicated %d, orphaned %d, 5xx %d\n", len(f.lost), len(f.duplicated), len(f.orphaned), fivexx)
	for _, l := range [][]string{f.lost, f.duplicated, f.orphaned} {
		for i, x := range l {
			if i == 10 {
				fmt.Printf("  ... %d more\n", len(l)-10)
				break
			}
			fmt.Println("  ", x)
		}
	}
	if len(f.lost)+len(f.duplicated)+len(f.orphaned)+fivexx+unfinished > 0 {
		return errors.New("targets missed")
	}
	return nil
}

// settledRuns lists every run with its status. Visibility follows a run's
// close a moment later: it lists again while a run a client saw finish
// still reads running (for at most a minute).
func settledRuns(ctx context.Context, c client.Client, clients []*mcpClient) (map[string]enumspb.WorkflowExecutionStatus, error) {
	for settle := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		all, err := listRuns(ctx, c)
		if err != nil {
			return nil, err
		}
		behind := 0
		for _, cl := range clients {
			for id, final := range cl.finals {
				if final != "input_required" && all[id] == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
					behind++
				}
			}
		}
		if behind == 0 || time.Now().After(settle) {
			return all, nil
		}
	}
}

// findings is what the audit found wrong.
type findings struct {
	lost, duplicated, orphaned []string
	cancelledUnheld            int
}

// compare holds the runs the clients hold (run id -> intent) against every
// run in Temporal: a held run missing or still running is lost, a run no
// client holds is orphaned unless it was cancelled (its request was
// dropped), and an intent served by more than one completed run is
// duplicated.
func compare(ctx context.Context, c client.Client, held map[string]string, all map[string]enumspb.WorkflowExecutionStatus) findings {
	var f findings
	completedBy := map[string]int{} // intent -> completed runs
	for id, in := range held {
		status, ok := all[id]
		switch {
		case !ok:
			f.lost = append(f.lost, id+" (missing)")
		case status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			f.lost = append(f.lost, id+" (still running)")
		case status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			completedBy[in]++
		}
	}
	for id, status := range all {
		if _, ok := held[id]; ok {
			continue
		}
		switch status {
		case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
			f.cancelledUnheld++
			continue
		case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			// Which intent did it serve?
			var out any
			if err := c.GetWorkflow(ctx, id, "").Get(ctx, &out); err == nil {
				b, _ := json.Marshal(out)
				if m := deleted.FindSubmatch(b); m != nil {
					completedBy[string(m[1])]++
				}
			}
		}
		f.orphaned = append(f.orphaned, id+" ("+status.String()+")")
	}
	for in, n := range completedBy {
		if n > 1 {
			f.duplicated = append(f.duplicated, fmt.Sprintf("%s x%d", in, n))
		}
	}
	return f
}

// report prints the request statistics and returns the number of 5xx
// answers.
func (st *stats) report() (fivexx int) {
	st.mu.Lock()
	lat := slices.Clone(st.latencies)
	codes := st.status
	transport, overload := st.transport, st.overload
	byMethod, samples := st.byMethod, st.samples
	perMethod := map[string][]time.Duration{}
	for m, l := range st.methodLat {
		perMethod[m] = slices.Clone(l)
	}
	st.mu.Unlock()
	slices.Sort(lat)
	var methods []string
	for m, l := range perMethod {
		slices.Sort(l)
		methods = append(methods, fmt.Sprintf("%s p50 %s p99 %s", m, percentile(l, 0.5), percentile(l, 0.99)))
	}
	slices.Sort(methods)
	for code, n := range codes {
		if code >= 500 {
			fivexx += n
		}
	}
	fmt.Printf("requests %d: HTTP statuses %v, transport errors %d, 503 overloaded %d; latency p50 %s p99 %s\n",
		len(lat)+fivexx, codes, transport, overload, percentile(lat, 0.50), percentile(lat, 0.99))
	fmt.Printf("latency by method: %s\n", strings.Join(methods, "; "))
	fmt.Printf("answers by method and HTTP status (0: none, the connection failed): %v\n", byMethod)
	for k, v := range samples {
		fmt.Printf("  first %s answer: %.300s\n", k, v)
	}
	return fivexx
}

// percentile returns the p-th percentile of the sorted latencies,
// rounded to the millisecond (0 for none).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))].Round(time.Millisecond)
}

// listRuns lists every run of the development-mode tenant (the catalog's
// own workflows carry no tenant) with its status.
func listRuns(ctx context.Context, c client.Client) (map[string]enumspb.WorkflowExecutionStatus, error) {
	all := map[string]enumspb.WorkflowExecutionStatus{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", PageSize: 1000,
			NextPageToken: token, Query: signals.SearchAttrTenant + " = 'anon:local'"})
		if err != nil {
			return nil, fmt.Errorf("list workflows: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			all[e.GetExecution().GetWorkflowId()] = e.GetStatus()
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return all, nil
		}
	}
}

// quietLogger drops the SDK's logs.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
