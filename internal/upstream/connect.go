package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/mcpcall"
	"github.com/openwop/temporal-mcp/workflows"
)

// Defaults of Options.
const (
	// DefaultProbeInterval is how often a connected upstream is pinged.
	DefaultProbeInterval = 10 * time.Second
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait before a
	// connection attempt after a failed one.
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = time.Minute
)

// Set is the upstreams of a file, kept connected: the tools they serve now
// and the activity that calls them. Make one with Connect; Close it. It is
// a workflows.ToolSet: its tools follow its upstreams (connected or not,
// notifications/tools/list_changed).
type Set struct {
	conns   map[string]*conn // by upstream name, one per entry of the file
	order   []*conn          // in the file's order
	changed chan struct{}
	stop    context.CancelFunc
	done    sync.WaitGroup
	calls   *mcpcall.Activities // the task methods' (legacytasks.go)
}

// conn is one upstream: its session while it is connected, and the tools
// it serves then.
type conn struct {
	up     Upstream
	opts   Options
	logger *zap.Logger
	set    *Set
	// progress maps the progress token of a call in flight to what
	// follows its notifications/progress.
	progress sync.Map
	// listChanged receives the upstream's notifications/tools/list_changed.
	listChanged chan struct{}

	mu      sync.Mutex         // guards the fields below
	calls   map[*inflight]bool // the calls in flight (elicit.go)
	session *mcp.ClientSession // nil while the upstream is not connected
	// tools are the upstream's tools served, by their upstream name, and
	// served the workflows.Tool of each.
	tools  map[string]*mcp.Tool
	served []workflows.Tool
	// lastErr is why the upstream is not connected.
	lastErr error
	// taskTools are the tools a 2025-11-25 upstream makes tasks of, with
	// their execution.taskSupport, as last listed (legacytasks.go).
	taskTools map[string]string
	taskAsks  sync.Map // progress token -> *inflight of the tasks that ask
}

// Options are the options of Connect.
type Options struct {
	// Logger logs the tools that are not served and why, and the
	// upstreams that come and go.
	Logger *zap.Logger
	// Version is the client version the upstreams see.
	Version string
	// Environ is the environment a stdio upstream's command starts with
	// (os.Environ's form), before its entry's env.
	Environ []string
	// ProbeInterval is how often a connected upstream is pinged; one that
	// does not answer is taken for gone (DefaultProbeInterval when zero).
	ProbeInterval time.Duration
	// MinBackoff and MaxBackoff bound the wait before a connection attempt
	// after a failed one: it doubles from MinBackoff up to MaxBackoff, each
	// wait drawn between its half and itself (DefaultMinBackoff and
	// DefaultMaxBackoff when zero).
	MinBackoff, MaxBackoff time.Duration
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	return o
}

// Connect connects to every upstream of f and lists their tools: each
// tool served becomes a workflows.Tool (Tools) whose runs call it through
// the activity of Activities. A tool the file lists that a reachable
// upstream does not serve, or that cannot be served (its schema does not
// compile), is an error; a tool not listed that cannot be served is left
// out and logged. An upstream that cannot be reached within ctx is logged
// and serves no tools until it can.
//
// Until Close, the Set keeps each upstream connected: it pings it every
// Options.ProbeInterval, lists its tools again on its
// notifications/tools/list_changed, takes its tools out when it is gone,
// and connects again with backoff; Changed tells each change.
func Connect(ctx context.Context, f File, opts Options) (*Set, error) {
	opts = opts.withDefaults()
	s := &Set{conns: map[string]*conn{}, changed: make(chan struct{}, 1)}
	if err := s.newCalls(f, opts); err != nil {
		return nil, err
	}
	for _, u := range f.Upstreams {
		c := &conn{up: u, opts: opts, logger: opts.Logger.With(zap.String("upstream", u.Name)), set: s,
			listChanged: make(chan struct{}, 1)}
		s.conns[u.Name], s.order = c, append(s.order, c)
		err := c.connect(ctx, true)
		var fileErr *fileError
		switch {
		case errors.As(err, &fileErr):
			_ = s.Close()
			return nil, fmt.Errorf("upstream %s: %w", u.Name, err)
		case err != nil:
			c.logger.Warn("upstream not reachable: its tools are not served until it is", zap.Error(err))
		}
	}
	runCtx, stop := context.WithCancel(context.Background())
	s.stop = stop
	for _, c := range s.order {
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			c.keep(runCtx)
		}()
	}
	return s, nil
}

// Tools are the tools of every upstream connected now, under their served
// names.
func (s *Set) Tools() []workflows.Tool {
	var out []workflows.Tool
	for _, c := range s.order {
		c.mu.Lock()
		out = append(out, c.served...)
		c.mu.Unlock()
	}
	return out
}

// Changed receives a value after Tools has changed (workflows.ToolSet).
func (s *Set) Changed() <-chan struct{} { return s.changed }

// notify tells Changed.
func (s *Set) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Activities is the activity the tools' runs call: register it in the
// registry that serves the Set (workflows.NewRegistry, then
// Registry.WithToolSet).
func (s *Set) Activities() *Activities {
	return &Activities{set: s, Activities: s.calls}
}

// Close stops keeping the upstreams connected and ends every upstream
// session (a stdio upstream's process exits).
func (s *Set) Close() error {
	if s.stop != nil {
		s.stop()
	}
	s.done.Wait()
	errs := []error{s.calls.Close()}
	for _, c := range s.order {
		if session := c.takeDown(nil); session != nil {
			if err := session.Close(); err != nil {
				errs = append(errs, fmt.Errorf("upstream %s: %w", c.up.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// fileError is a mismatch between the file and what the upstream serves.
type fileError struct{ err error }

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// connect connects to the upstream and lists its tools. A mismatch with
// the file is, when strict, a *fileError, and nothing is served;
// otherwise it is logged, and the tools that can be are served.
func (c *conn) connect(ctx context.Context, strict bool) error {
	session, err := c.dial(ctx)
	if err != nil {
		c.setDown(err)
		return err
	}
	tools, served, problems, err := c.list(ctx, session)
	if err == nil && strict && len(problems) > 0 {
		err = &fileError{joined(problems)}
	}
	for _, p := range problems {
		if !strict {
			c.logger.Warn("upstream tools differ from the file", zap.Error(p))
		}
	}
	if err != nil {
		_ = session.Close()
		c.setDown(err)
		return err
	}
	c.mu.Lock()
	c.session, c.tools, c.served, c.lastErr = session, tools, served, nil
	c.mu.Unlock()
	c.set.notify()
	c.logger.Info("upstream connected", zap.Int("tools", len(served)))
	return nil
}

// setDown records why the upstream is not connected.
func (c *conn) setDown(err error) {
	c.mu.Lock()
	c.lastErr = err
	c.mu.Unlock()
}

// takeDown takes the upstream's tools out, records why (err; nil when
// the Set closes), and returns the session to close (nil for none).
func (c *conn) takeDown(err error) *mcp.ClientSession {
	c.mu.Lock()
	session, had := c.session, len(c.served) > 0
	c.session, c.tools, c.served = nil, nil, nil
	if err != nil {
		c.lastErr = err
	}
	c.mu.Unlock()
	if had {
		c.set.notify()
	}
	return session
}

// keep keeps the upstream connected until ctx ends: it follows the
// session while it lasts (watch), then connects again with backoff.
func (c *conn) keep(ctx context.Context) {
	c.mu.Lock()
	failures := 0
	if c.session == nil {
		failures = 1 // Connect logged the first failure
	}
	c.mu.Unlock()
	for {
		c.mu.Lock()
		session := c.session
		c.mu.Unlock()
		if session != nil {
			err := c.watch(ctx, session)
			if ctx.Err() != nil {
				return
			}
			c.logger.Warn("upstream gone: its tools are withdrawn until it is back", zap.Error(err))
			// The session ends in the background: a server that does not
			// answer must not hold the next connection.
			gone := c.takeDown(err)
			go func() { _ = gone.Close() }()
			failures = 0
		}
		if !sleep(ctx, backoff(failures, c.opts.MinBackoff, c.opts.MaxBackoff)) {
			return
		}
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := c.connect(actx, false)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			if failures == 1 {
				c.logger.Warn("upstream not reachable; connecting again with backoff", zap.Error(err))
			} else {
				c.logger.Debug("upstream still not reachable", zap.Int("attempts", failures), zap.Error(err))
			}
		}
	}
}

// attemptTimeout bounds one attempt to connect and list the tools.
const attemptTimeout = 30 * time.Second

// probeFailures is how many pings in a row must fail for an upstream to
// be taken for gone: one lost ping does not end the calls in flight.
const probeFailures = 2

// watch follows a session until it is gone (its connection closed, or
// probeFailures pings in a row failed) or ctx ends, listing the tools
// again on each notifications/tools/list_changed.
func (c *conn) watch(ctx context.Context, session *mcp.ClientSession) error {
	ended := make(chan error, 1)
	go func() { ended <- session.Wait() }()
	probe := time.NewTicker(c.opts.ProbeInterval)
	defer probe.Stop()
	failed := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-ended:
			return fmt.Errorf("the connection closed: %w", cmpErr(err, errors.New("closed by the upstream")))
		case <-probe.C:
			pctx, cancel := context.WithTimeout(ctx, c.opts.ProbeInterval)
			err := session.Ping(pctx, nil)
			cancel()
			if failed = failed + 1; err == nil {
				failed = 0
			} else if failed >= probeFailures {
				return fmt.Errorf("ping: %w", err)
			}
		case <-c.listChanged:
			lctx, cancel := context.WithTimeout(ctx, attemptTimeout)
			err := c.relist(lctx, session)
			cancel()
			if err != nil {
				return err
			}
		}
	}
}

// relist lists the tools of a connected upstream again and serves them.
// A tool of the file that the upstream no longer serves is logged.
func (c *conn) relist(ctx context.Context, session *mcp.ClientSession) error {
	tools, served, problems, err := c.list(ctx, session)
	if err != nil {
		return err
	}
	for _, p := range problems {
		c.logger.Warn("upstream tools differ from the file", zap.Error(p))
	}
	c.mu.Lock()
	c.tools, c.served = tools, served
	c.mu.Unlock()
	c.set.notify()
	c.logger.Info("upstream tools listed again", zap.Int("tools", len(served)))
	return nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// backoff is the wait before an attempt after failures failed ones: lo
// after none (the upstream was lost), then doubling from lo up to hi,
// drawn between its half and itself.
func backoff(failures int, lo, hi time.Duration) time.Duration {
	if failures == 0 {
		return lo
	}
	d := lo
	for range min(failures, 32) {
		if d >= hi/2 {
			d = hi
			break
		}
		d *= 2
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d, or until ctx ends (then it returns false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// dial opens a session with the upstream.
func (c *conn) dial(ctx context.Context) (*mcp.ClientSession, error) {
	u := c.up
	client := mcp.NewClient(&mcp.Implementation{Name: "openwop", Version: c.opts.Version}, &mcp.ClientOptions{
		ProgressNotificationHandler: c.onProgress,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.listChanged <- struct{}{}:
			default:
			}
		},
		ElicitationHandler: c.onElicit,
	})
	var transport mcp.Transport
	if u.Command != "" {
		cmd := exec.Command(u.Command, u.Args...)
		cmd.Env = slices.Clone(c.opts.Environ)
		for k, v := range u.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = os.Stderr
		transport = &mcp.CommandTransport{Command: cmd}
	} else {
		transport = &mcp.StreamableClientTransport{Endpoint: u.URL,
			HTTPClient: &http.Client{Transport: callStreams{headerTransport{headers: u.headers, caller: u.ForwardCaller, next: http.DefaultTransport}}}}
	}
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return session, nil
}

// onProgress passes a notifications/progress to the call it belongs to.
func (c *conn) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	key, err := json.Marshal(req.Params.ProgressToken)
	if err != nil {
		return
	}
	if f, ok := c.progress.Load(string(key)); ok {
		f.(func(*mcp.ProgressNotificationParams))(req.Params)
	}
}

// list lists the upstream's tools and makes the ones served. problems are
// the mismatches with the file: a tool of tools or policy the upstream
// does not serve, a tool of tools that cannot be served.
func (c *conn) list(ctx context.Context, session *mcp.ClientSession) (tools map[string]*mcp.Tool, served []workflows.Tool, problems []error, err error) {
	tools = map[string]*mcp.Tool{}
	bad := map[string]bool{}
	tasks := c.servesTasks(session)
	c.taskTools = c.legacyTaskTools(ctx, tasks)
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, nil, fmt.Errorf("tools/list: %w", err)
		}
		listed := slices.Contains(c.up.Tools, t.Name)
		if len(c.up.Tools) > 0 && !listed {
			continue
		}
		tool := c.tool(t, tasks)
		if err := tool.Err(); err != nil {
			if listed {
				bad[t.Name] = true
				problems = append(problems, fmt.Errorf("tool %s cannot be served: %w", t.Name, err))
			} else {
				c.logger.Warn("upstream tool not served", zap.String("tool", t.Name), zap.Error(err))
			}
			continue
		}
		tools[t.Name] = t
		served = append(served, tool)
	}
	for _, name := range c.up.Tools {
		if tools[name] == nil && !bad[name] {
			problems = append(problems, fmt.Errorf("tools: the upstream serves no tool %q", name))
		}
	}
	for name := range c.up.Policy {
		if tools[name] == nil {
			problems = append(problems, fmt.Errorf("policy: the upstream serves no tool %q", name))
		}
	}
	return tools, served, problems, nil
}

// current is the session of a connected upstream and its tool named
// name, or why the call cannot be made.
func (c *conn) current(name string) (*mcp.ClientSession, *mcp.Tool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session == nil {
		return nil, nil, &unavailableError{upstream: c.up.Name, err: c.lastErr}
	}
	return c.session, c.tools[name], nil
}

// unavailableError is the error of a call of an upstream that is not
// connected.
type unavailableError struct {
	upstream string
	err      error
}

func (e *unavailableError) Error() string {
	msg := fmt.Sprintf("upstream %s is not connected, so the call was not sent", e.upstream)
	if e.err != nil {
		msg += fmt.Sprintf(" (%v)", e.err)
	}
	return msg
}
