package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/workflows"
)

// Set is the upstreams of a file, connected: the tools they serve and the
// activity that calls them. Make one with Connect; Close it.
type Set struct {
	conns map[string]*conn // by upstream name
	tools []workflows.Tool
}

// conn is the session of one upstream.
type conn struct {
	up      Upstream
	session *mcp.ClientSession
	// progress maps the progress token of a call in flight to what
	// follows its notifications/progress.
	progress sync.Map
	// tools are the upstream's tools served, by their upstream name.
	tools map[string]*mcp.Tool
	mu    sync.Mutex
	calls map[*inflight]bool // the calls in flight (elicit.go)
}

// Options are the options of Connect.
type Options struct {
	// Logger logs the tools that are not served and why.
	Logger *zap.Logger
	// Version is the client version the upstreams see.
	Version string
	// Environ is the environment a stdio upstream's command starts with
	// (os.Environ's form), before its entry's env.
	Environ []string
}

// Connect connects to every upstream of f and lists their tools: each
// tool served becomes a workflows.Tool (Tools) whose runs call it through
// the activity of Activities. A tool the file lists that its upstream does
// not serve, or cannot be served (its schema does not compile), is an
// error; a tool not listed that cannot be served is left out and logged.
func Connect(ctx context.Context, f File, opts Options) (*Set, error) {
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	s := &Set{conns: map[string]*conn{}}
	for _, u := range f.Upstreams {
		c, err := dial(ctx, u, opts)
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("upstream %s: %w", u.Name, err)
		}
		s.conns[u.Name] = c
		tools, err := c.list(ctx, logger.With(zap.String("upstream", u.Name)))
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("upstream %s: %w", u.Name, err)
		}
		s.tools = append(s.tools, tools...)
	}
	return s, nil
}

// Tools are the tools of every upstream, under their served names.
func (s *Set) Tools() []workflows.Tool { return slices.Clone(s.tools) }

// Activities is the activity the tools' runs call (register it with the
// tools, e.g. in workflows.NewRegistry).
func (s *Set) Activities() *Activities {
	return &Activities{set: s, Activities: s.taskActivities()}
}

// Close ends every upstream session (a stdio upstream's process exits).
func (s *Set) Close() error {
	var errs []error
	for name, c := range s.conns {
		if err := c.session.Close(); err != nil {
			errs = append(errs, fmt.Errorf("upstream %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// dial connects to u.
func dial(ctx context.Context, u Upstream, opts Options) (*conn, error) {
	c := &conn{up: u, tools: map[string]*mcp.Tool{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "openwop", Version: opts.Version}, &mcp.ClientOptions{
		ProgressNotificationHandler: c.onProgress,
		ElicitationHandler:          c.onElicit,
	})
	var transport mcp.Transport
	if u.Command != "" {
		cmd := exec.Command(u.Command, u.Args...)
		cmd.Env = slices.Clone(opts.Environ)
		for k, v := range u.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = os.Stderr
		transport = &mcp.CommandTransport{Command: cmd}
	} else {
		transport = &mcp.StreamableClientTransport{Endpoint: u.URL,
			HTTPClient: &http.Client{Transport: callStreams{headerTransport{headers: u.headers, next: http.DefaultTransport}}}}
	}
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	c.session = session
	return c, nil
}

// headerTransport adds the upstream's headers to each request.
type headerTransport struct {
	headers http.Header
	next    http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, vs := range t.headers {
		req.Header[k] = vs
	}
	return t.next.RoundTrip(req)
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

// list lists the upstream's tools and makes the ones served.
func (c *conn) list(ctx context.Context, logger *zap.Logger) ([]workflows.Tool, error) {
	var out []workflows.Tool
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		listed := slices.Contains(c.up.Tools, t.Name)
		if len(c.up.Tools) > 0 && !listed {
			continue
		}
		tool := c.tool(t)
		if err := tool.Err(); err != nil {
			if listed {
				return nil, fmt.Errorf("tool %s cannot be served: %w", t.Name, err)
			}
			logger.Warn("upstream tool not served", zap.String("tool", t.Name), zap.Error(err))
			continue
		}
		c.tools[t.Name] = t
		out = append(out, tool)
	}
	for _, name := range c.up.Tools {
		if c.tools[name] == nil {
			return nil, fmt.Errorf("tools: the upstream serves no tool %q", name)
		}
	}
	for name := range c.up.Policy {
		if c.tools[name] == nil {
			return nil, fmt.Errorf("policy: the upstream serves no tool %q", name)
		}
	}
	return out, nil
}
