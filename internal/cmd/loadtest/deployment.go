package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/pgtest"
)

// historyShards is the shard count of a PostgreSQL-backed cluster: enough
// that every node owns some.
const historyShards = 4

// prepare builds the three binaries into dir (once) and removes the
// database, journals and logs of an earlier run: the audit counts every
// run in Temporal. The server replicas are mount-only (Temporal external,
// no worker), so cmd/server is built as a deployment builds them, with
// -tags mountonly.
func prepare(dir string) error {
	for _, b := range [][3]string{{"devserver", "./internal/cmd/devserver"}, {"worker", "./cmd/worker"}, {"server", "./cmd/server", "mountonly"}} {
		out := filepath.Join(dir, b[0])
		if _, err := os.Stat(out); err == nil {
			continue
		}
		fmt.Println("building", b[1], b[2])
		cmd := exec.Command("go", "build", "-tags", b[2], "-o", out, b[1])
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", b[1], err)
		}
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	data, _ := filepath.Glob(filepath.Join(dir, "data-*"))
	dbs, _ := filepath.Glob(filepath.Join(dir, "temporal*.db*")) // the database, its visibility file, their WALs
	for _, f := range append(append(old, data...), dbs...) {
		if err := os.RemoveAll(filepath.Join(dir, filepath.Base(f))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// deployment is the processes of one load test (Temporal nodes, workers,
// mount-only server replicas, PostgreSQL if chosen), the harness's
// balancers in front of several nodes or replicas, and how to tell each
// process is ready.
type deployment struct {
	temporalAddr, base string
	procs              map[string]*proc
	order              []string // start order
	ready              map[string]func(context.Context) error
	pg                 *pgtest.Server
	pgPort             int
	closers            []io.Closer
	o                  options
}

// name is the process name of the i-th (from 1) process of a kind: the
// kind itself for the first.
func name(kind string, i int) string {
	if i == 1 {
		return kind
	}
	return kind + strconv.Itoa(i)
}

// newDeployment lays out the processes on loopback ports, and starts the
// balancers; no process runs yet.
func newDeployment(o options) (*deployment, error) {
	d := &deployment{procs: map[string]*proc{}, ready: map[string]func(context.Context) error{}, o: o}
	nodes, err := d.addTemporal()
	if err != nil {
		return nil, err
	}
	d.temporalAddr = nodes[0]
	if len(nodes) > 1 {
		b, err := newTCPBalancer(nodes)
		if err != nil {
			return nil, err
		}
		d.closers = append(d.closers, b)
		d.temporalAddr = b.addr()
	}
	remote := []string{"TEMPORAL_ADDRESS=" + d.temporalAddr, "OPENWOP_FIXTURES=on", "OPENWOP_LOG_LEVEL=warn"}
	for i := 1; i <= o.workers; i++ {
		n := name("worker", i)
		d.add(&proc{name: n, dir: o.dir, bin: filepath.Join(o.dir, "worker"), env: slices.Concat(remote, []string{"OPENWOP_DATA_DIR=" + o.dir})},
			func(context.Context) error { return nil }) // the servers' readiness covers it
	}
	var replicas []string
	for i := 1; i <= o.replicas; i++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		n := name("server", i)
		// One journal per replica: each has a data directory of its own.
		data := filepath.Join(o.dir, "data-"+n)
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		replicas = append(replicas, base)
		d.add(&proc{name: n, dir: o.dir, bin: filepath.Join(o.dir, "server"), env: slices.Concat(remote, []string{
			"OPENWOP_WORKER=off", "OPENWOP_HTTP_ADDR=127.0.0.1:" + strconv.Itoa(port), "OPENWOP_DATA_DIR=" + data})},
			func(ctx context.Context) error { return serverReady(ctx, base) })
	}
	d.base = replicas[0]
	if len(replicas) > 1 {
		b, err := newHTTPBalancer(replicas)
		if err != nil {
			return nil, err
		}
		d.closers = append(d.closers, b)
		d.base = b.url()
	}
	return d, nil
}

// add adds a process and its readiness check, started after those added
// before it.
func (d *deployment) add(p *proc, ready func(context.Context) error) {
	d.procs[p.name] = p
	d.ready[p.name] = ready
	d.order = append(d.order, p.name)
}

// addTemporal lays out the Temporal nodes and returns their frontend
// addresses.
func (d *deployment) addTemporal() ([]string, error) {
	dir := d.o.dir
	if d.o.persistence == "sqlite" {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		d.add(&proc{name: "temporal", dir: dir, bin: filepath.Join(dir, "devserver"),
			args: []string{"-db", filepath.Join(dir, "temporal.db"), "-port", strconv.Itoa(port)}},
			func(ctx context.Context) error { return temporalReady(ctx, addr) })
		return []string{addr}, nil
	}
	var err error
	if d.pgPort, err = freePort(); err != nil {
		return nil, err
	}
	ports, err := clusterPorts(d.o.temporalNodes)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for i, port := range ports {
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		args := []string{"-postgres", fmt.Sprintf("127.0.0.1:%d", d.pgPort), "-postgres-user", pgtest.User,
			"-port", strconv.Itoa(port), "-shards", strconv.Itoa(historyShards)}
		if len(ports) > 1 {
			args = append(args, "-cluster")
		}
		d.add(&proc{name: name("temporal", i+1), dir: dir, bin: filepath.Join(dir, "devserver"), args: args},
			func(ctx context.Context) error { return temporalReady(ctx, addr) })
		addrs = append(addrs, addr)
	}
	return addrs, nil
}

// clusterPorts picks the first port of each of n cluster nodes, their
// ranges of devtemporal.ClusterPorts apart (a single node needs one port
// only, but the same range does no harm).
func clusterPorts(n int) ([]int, error) {
	var ports []int
	for len(ports) < n {
		p, err := devtemporal.FreeClusterPort("127.0.0.1")
		if err != nil {
			return nil, err
		}
		clash := false
		for _, q := range ports {
			clash = clash || (p < q+devtemporal.ClusterPorts && q < p+devtemporal.ClusterPorts)
		}
		if !clash {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// startAll starts PostgreSQL (if chosen) and every process in order.
func (d *deployment) startAll() error {
	if d.o.persistence == "postgres" {
		log, err := os.OpenFile(filepath.Join(d.o.dir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		d.closers = append(d.closers, log)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		// The PostgreSQL 15 of a Debian machine; installed when missing.
		if err := pgtest.Install(ctx, log); err != nil {
			return err
		}
		if d.pg, err = pgtest.Start(ctx, pgtest.Options{Port: d.pgPort, Log: log}); err != nil {
			return err
		}
		fmt.Println("PostgreSQL ready:", d.pg.Addr(), "data", d.pg.Dir())
	}
	for _, n := range d.order {
		if err := d.start(n); err != nil {
			return err
		}
	}
	return nil
}

// describe names the deployment's shape.
func (d *deployment) describe() string {
	return fmt.Sprintf("Temporal on %s (%d node(s)), %d worker(s), %d server replica(s)",
		d.o.persistence, d.o.temporalNodes, d.o.workers, d.o.replicas)
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

// stop stops every process, the balancers and PostgreSQL.
func (d *deployment) stop() {
	for i := len(d.order) - 1; i >= 0; i-- {
		d.procs[d.order[i]].stop()
	}
	if d.pg != nil {
		_ = d.pg.Close()
	}
	for _, c := range d.closers {
		_ = c.Close()
	}
}

// killInTurn kills -9 the processes named in kills (comma-separated), one
// at a time spread over the load phase that ends at loadEnd, and restarts
// each. postgres is a crash (immediate shutdown) and restart of
// PostgreSQL.
func (d *deployment) killInTurn(kills string, loadEnd time.Time, duration time.Duration) error {
	if kills == "" {
		return nil
	}
	names := strings.Split(kills, ",")
	for _, n := range names {
		if _, ok := d.procs[n]; !ok && !(n == "postgres" && d.pg != nil) {
			return fmt.Errorf("-kill: unknown process %q (%s)", n, strings.Join(d.order, ", "))
		}
	}
	for i, n := range names {
		at := time.Duration(i+1) * duration / time.Duration(len(names)+1)
		time.Sleep(time.Until(loadEnd.Add(-duration + at)))
		if err := d.killOne(n); err != nil {
			return fmt.Errorf("after restart: %w", err)
		}
		fmt.Printf("%s %s restarted\n", time.Now().Format(time.TimeOnly), n)
	}
	return nil
}

// killOne kills -9 one process (or crashes PostgreSQL) and restarts it.
func (d *deployment) killOne(n string) error {
	if n == "postgres" {
		fmt.Printf("%s crash (immediate shutdown) of postgres (pid %d)\n", time.Now().Format(time.TimeOnly), d.pg.Pid())
		if err := d.pg.Crash(); err != nil {
			return err
		}
		time.Sleep(time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return d.pg.Start(ctx)
	}
	p := d.procs[n]
	fmt.Printf("%s kill -9 %s (pid %d)\n", time.Now().Format(time.TimeOnly), n, p.pid())
	p.kill()
	time.Sleep(time.Second)
	return d.start(n)
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

// serverReady waits for the worker's tools in tools/list.
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

// footprint prints the resident memory of every process (and of
// PostgreSQL's processes together) as the load ends.
func (d *deployment) footprint() {
	var parts []string
	for _, n := range d.order {
		if kb, ok := rssKB(d.procs[n].pid()); ok {
			parts = append(parts, fmt.Sprintf("%s %d MiB", n, kb/1024))
		}
	}
	if d.pg != nil {
		total := int64(0)
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", d.pg.Pid(), d.pg.Pid()))
		for _, f := range append(strings.Fields(string(kids)), strconv.Itoa(d.pg.Pid())) {
			pid, _ := strconv.Atoi(f)
			if kb, ok := rssKB(pid); ok {
				total += kb
			}
		}
		parts = append(parts, fmt.Sprintf("postgres (all its processes, shared memory counted in each) %d MiB", total/1024))
	}
	fmt.Printf("resident memory at the end of the load: %s\n", strings.Join(parts, ", "))
}

// rssKB reads VmRSS of a process from /proc (Linux).
func rssKB(pid int) (int64, bool) {
	if pid == 0 {
		return 0, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}
