package mcpcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// Server is how the activities reach one MCP server: a streamable HTTP
// endpoint (URL) or a command spoken to over stdio (Command). What it
// holds (credentials in Header, the environment of a command) stays in
// the worker's memory: workflow code names the server, and history
// records only that name.
type Server struct {
	// URL is the streamable HTTP endpoint.
	URL string
	// Header is sent with every HTTP request, e.g. Authorization.
	Header http.Header
	// HTTPClient sends the HTTP requests (nil: http.DefaultClient).
	HTTPClient *http.Client
	// Command, with Args and Env (added to the worker's environment), is
	// the server to start for each call and speak to over stdio.
	Command string
	// Args are the command's arguments.
	Args []string
	// Env holds "KEY=value" entries added to the command's environment.
	Env []string
	// ProtocolVersion, when "2025-11-25", makes the HTTP server be
	// spoken to in that version from the start; empty tries 2026-07-28
	// first and falls back to older versions.
	ProtocolVersion string
}

// Activities are the activities CallTool and ListTools run: pass the
// value to workflows.NewRegistry with the tools that call, or register it
// on a hand-built worker with Register. Its exported methods are those
// activities; workflow code calls them through CallTool and ListTools,
// never directly.
type Activities struct {
	servers   map[string]Server
	heartbeat time.Duration
}

// NewActivities returns the activities that reach servers, by the name
// workflow code gives them. Each server needs a URL or a Command, not
// both.
func NewActivities(servers map[string]Server) (*Activities, error) {
	for name, s := range servers {
		switch {
		case name == "":
			return nil, errors.New("mcpcall: a server has an empty name")
		case (s.URL == "") == (s.Command == ""):
			return nil, fmt.Errorf("mcpcall: server %q needs a URL or a Command, not both", name)
		case s.ProtocolVersion != "" && s.ProtocolVersion != legacyVersion:
			return nil, fmt.Errorf("mcpcall: server %q: protocol version %q is not %q or empty", name, s.ProtocolVersion, legacyVersion)
		}
	}
	return &Activities{servers: servers, heartbeat: 5 * time.Second}, nil
}

// Register registers the activities on w, a worker.Worker or the SDK's
// test environment.
func (a *Activities) Register(w worker.ActivityRegistry) {
	w.RegisterActivityWithOptions(a, activity.RegisterOptions{SkipInvalidStructFunctions: true})
}

// server returns the server named name.
func (a *Activities) server(name string) (Server, error) {
	s, ok := a.servers[name]
	if !ok {
		return Server{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("mcpcall: no server %q is configured on this worker", name), "mcpcall.UnknownServer", nil)
	}
	return s, nil
}

// wire returns a 2026-07-28 client of s.
func (a *Activities) wire(ctx context.Context, s Server) *wireClient {
	return &wireClient{url: s.URL, header: s.Header, http: s.HTTPClient,
		onNotify: func(method string, params json.RawMessage) {
			if method == "notifications/progress" {
				activity.RecordHeartbeat(ctx, params)
			}
		}}
}

// MCPListTools is the activity of ListTools: every tool of the server.
func (a *Activities) MCPListTools(ctx context.Context, server string) ([]*mcp.Tool, error) {
	s, err := a.server(server)
	if err != nil {
		return nil, err
	}
	if s.URL != "" && s.ProtocolVersion == "" {
		tools, err := a.listWire(ctx, s)
		if !legacyOnly(err) {
			return tools, final(err)
		}
	}
	cs, err := a.session(ctx, s)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, final(fmt.Errorf("list the tools of %q: %w", server, err))
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// listWire lists the tools of a 2026-07-28 server, page by page.
func (a *Activities) listWire(ctx context.Context, s Server) ([]*mcp.Tool, error) {
	c := a.wire(ctx, s)
	var tools []*mcp.Tool
	cursor := ""
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page struct {
			Tools      []*mcp.Tool `json:"tools"`
			NextCursor string      `json:"nextCursor"`
		}
		if err := c.request(ctx, "tools/list", "", params, nil, &page); err != nil {
			return nil, err
		}
		tools = append(tools, page.Tools...)
		if page.NextCursor == "" {
			return tools, nil
		}
		cursor = page.NextCursor
	}
}

// session connects the go-sdk client to s, for servers that do not speak
// 2026-07-28 (a command, or a session-era HTTP server).
func (a *Activities) session(ctx context.Context, s Server) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpcall", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, p *mcp.ProgressNotificationClientRequest) {
			activity.RecordHeartbeat(ctx, p.Params)
		},
	})
	var t mcp.Transport
	if s.Command != "" {
		cmd := exec.CommandContext(ctx, s.Command, s.Args...)
		if len(s.Env) > 0 {
			cmd.Env = append(cmd.Environ(), s.Env...)
		}
		t = &mcp.CommandTransport{Command: cmd}
	} else {
		hc := s.HTTPClient
		if hc == nil {
			hc = http.DefaultClient
		}
		if len(s.Header) > 0 {
			copied := *hc
			copied.Transport = headerTransport{header: s.Header, next: hc.Transport}
			hc = &copied
		}
		t = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to the MCP server: %w", err)
	}
	return cs, nil
}

// headerTransport adds header to every request.
type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.header {
		r.Header[k] = append([]string(nil), vs...)
	}
	next := h.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// heartbeating records a heartbeat every a.heartbeat until the returned
// stop is called, so that a long request's activity stays alive while
// the worker does and is retried soon after it dies.
func (a *Activities) heartbeating(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(a.heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
