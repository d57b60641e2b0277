package mcpcall

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/temporal"
)

// Held sessions. A 2025-11-25 task is server state that belongs to the
// session that created it: a command's process, and on many HTTP servers
// (server-everything's among them) the session. For a Server with Hold,
// the activities open one 2025-11-25 session with it on first use and
// keep it for the worker's life (Close ends it), and the task methods of
// every call go over it. Its questions, which the server sends as
// requests on the stream of tasks/result, go to Server.OnRequest.

// legacyConn sends 2025-11-25 requests in a session.
type legacyConn interface {
	request(ctx context.Context, method, name string, params map[string]any, meta map[string]any, out any) error
	// sessionID is the session's HTTP session id ("" for none).
	sessionID() string
}

// sessionID implements legacyConn.
func (c *wireClient) sessionID() string { return c.session }

// sessionID implements legacyConn.
func (c *stdioClient) sessionID() string { return "" }

// held is a session the activities hold with a server.
type held struct {
	conn  legacyConn
	tasks bool // it makes tasks of tools/call
	close func()
	// ended reports whether the session has ended (a command's process
	// exited): the next use opens a new one.
	ended func() bool
}

// metaRelatedTask is the _meta key of the task a server's request is for.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// legacySession returns a 2025-11-25 session with s: the held one for a
// Server with Hold, else one of the caller's own that release ends. A
// held HTTP server's task made in another session (session, recorded by
// a worker before a restart) is reached in that session, which the
// server may still keep.
func (a *Activities) legacySession(ctx context.Context, name string, s Server, session string) (c legacyConn, tasks bool, release func(), err error) {
	if s.Hold && s.URL != "" && session != "" {
		a.mu.Lock()
		h := a.held[name]
		a.mu.Unlock()
		if h == nil || h.conn.sessionID() != session {
			wc := a.wire(ctx, s)
			wc.legacy, wc.session, wc.onRequest, wc.onNotify = true, session, s.OnRequest, nil
			return wc, true, func() {}, nil
		}
	}
	if !s.Hold {
		wc, tasks, err := a.openLegacy(ctx, s)
		if err != nil {
			return nil, false, nil, err
		}
		return wc, tasks, func() { closeLegacy(ctx, wc) }, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if h := a.held[name]; h != nil {
		if !h.ended() {
			return h.conn, h.tasks, func() {}, nil
		}
		h.close()
		delete(a.held, name)
	}
	// The session outlives the activity that opens it.
	octx := context.WithoutCancel(ctx)
	var h *held
	if s.Command != "" {
		h, err = openStdio(ctx, octx, s)
	} else {
		var wc *wireClient
		wc, tasks, err = a.openLegacy(ctx, s)
		if err == nil {
			wc.onRequest, wc.onNotify = s.OnRequest, nil
			h = &held{conn: wc, tasks: tasks, close: func() { closeLegacy(octx, wc) }, ended: func() bool { return false }}
		}
	}
	if err != nil {
		return nil, false, nil, err
	}
	a.held[name] = h
	return h.conn, h.tasks, func() {}, nil
}

// Close ends the sessions the activities hold (a command's process
// exits).
func (a *Activities) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, h := range a.held {
		h.close()
		delete(a.held, name)
	}
	return nil
}

// TaskTools opens the session held with the server named server (a
// Server with Hold) and reports the execution.taskSupport of each of its
// tools that takes a task ("optional" or "required"), when the server
// makes tasks of tools/call; otherwise it ends the session and reports
// none. The go-sdk's client keeps neither the server's tasks capability
// nor a tool's execution, which is why it is asked here.
func (a *Activities) TaskTools(ctx context.Context, server string) (map[string]string, error) {
	s, err := a.server(server)
	if err != nil {
		return nil, err
	}
	if !s.Hold {
		return nil, fmt.Errorf("mcpcall: server %q is not held", server)
	}
	c, tasks, _, err := a.legacySession(ctx, server, s, "")
	if err != nil {
		return nil, fmt.Errorf("mcpcall: open a session with %q: %w", server, err)
	}
	out := map[string]string{}
	cursor := ""
	for tasks {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page struct {
			Tools []struct {
				Name      string `json:"name"`
				Execution struct {
					TaskSupport string `json:"taskSupport"`
				} `json:"execution"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := c.request(ctx, "tools/list", "", params, nil, &page); err != nil {
			return nil, fmt.Errorf("mcpcall: list the tools of %q: %w", server, err)
		}
		for _, t := range page.Tools {
			if ts := t.Execution.TaskSupport; ts == "optional" || ts == "required" {
				out[t.Name] = ts
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(out) == 0 {
		a.mu.Lock()
		if h := a.held[server]; h != nil {
			h.close()
			delete(a.held, server)
		}
		a.mu.Unlock()
	}
	return out, nil
}

// MCPAwaitInput is the activity that lets a 2025-11-25 task that asks
// for input (input_required) ask: it holds tasks/result open in the held
// session, on whose stream the server sends its questions (answered by
// Server.OnRequest with the activity's context), and polls tasks/get
// until the task no longer asks. It then lets go of tasks/result and
// returns the task as MCPGetTask would. No connection is held once the
// question is answered.
func (a *Activities) MCPAwaitInput(ctx context.Context, req TaskRequest) (Task, error) {
	s, err := a.server(req.Server)
	if err != nil {
		return Task{}, err
	}
	if !s.Hold || s.OnRequest == nil {
		return Task{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"task %s asks for input, which mcpcall relays only for a held %s server with an OnRequest (its question rides a tasks/result stream)", req.TaskID, legacyVersion),
			"mcpcall.InputNotRelayed", nil)
	}
	c, _, _, err := a.legacySession(ctx, req.Server, s, req.Session)
	if err != nil {
		return Task{}, err
	}
	defer a.heartbeating(ctx)()
	rctx, cancel := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_ = c.request(rctx, "tasks/result", "", map[string]any{"taskId": req.TaskID}, nil, nil)
	}()
	defer func() { cancel(); <-ended }()
	tick := time.NewTicker(max(minPollInterval, a.heartbeat/5))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return Task{}, ctx.Err()
		case <-ended: // the task has ended, or the session failed
			t, err := readLegacy(ctx, c, req.TaskID)
			t.Session = req.Session
			return t, final(err)
		case <-tick.C:
		}
		var lt legacyTask
		if err := c.request(ctx, "tasks/get", "", map[string]any{"taskId": req.TaskID}, nil, &lt); err != nil {
			return Task{}, final(err)
		}
		if lt.Status != StatusInputRequired {
			t, err := readLegacy(ctx, c, req.TaskID)
			t.Session = req.Session
			return t, final(err)
		}
	}
}

// stdioClient speaks 2025-11-25 to a command's process over stdio: one
// JSON line a message. Responses go to the request that waits for them;
// the server's requests go to onRequest, with the context of the
// tasks/result in flight for the task they are for.
type stdioClient struct {
	in        io.WriteCloser
	wmu       sync.Mutex
	mu        sync.Mutex
	pending   map[string]chan rpcMessage
	results   map[string]context.Context // task id -> ctx of its tasks/result
	seq       atomic.Int64
	onRequest func(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// openStdio starts s's command, to live as long as life, and opens a
// 2025-11-25 session with it within ctx.
func openStdio(ctx, life context.Context, s Server) (*held, error) {
	life, stop := context.WithCancel(life)
	cmd := exec.CommandContext(life, s.Command, s.Args...)
	if len(s.Env) > 0 {
		cmd.Env = append(cmd.Environ(), s.Env...)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		stop()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		stop()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		stop()
		return nil, fmt.Errorf("start %s: %w", s.Command, err)
	}
	c := &stdioClient{in: in, pending: map[string]chan rpcMessage{}, results: map[string]context.Context{}, onRequest: s.OnRequest}
	ended := make(chan struct{})
	go func() { c.read(out); close(ended) }()
	h := &held{conn: c, close: func() { _ = in.Close(); stop(); _ = cmd.Wait() }, ended: func() bool {
		select {
		case <-ended:
			return true
		default:
			return false
		}
	}}
	var init initializeResult
	err = c.request(ctx, "initialize", "", initializeParams(s), nil, &init)
	if err == nil {
		err = c.write(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	}
	if err != nil {
		h.close()
		return nil, fmt.Errorf("initialize %s: %w", s.Command, err)
	}
	h.tasks = init.makesTasks()
	return h, nil
}

// write writes msg as one line.
func (c *stdioClient) write(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.in.Write(append(b, '\n'))
	return err
}

// request implements legacyConn.
func (c *stdioClient) request(ctx context.Context, method, _ string, params map[string]any, meta map[string]any, out any) error {
	if params == nil {
		params = map[string]any{}
	}
	if len(meta) > 0 {
		params["_meta"] = meta
	}
	id := fmt.Sprintf("mcpcall-%d", c.seq.Add(1))
	key, _ := json.Marshal(id)
	ch := make(chan rpcMessage, 1)
	c.mu.Lock()
	c.pending[string(key)] = ch
	taskID, _ := params["taskId"].(string)
	if method == "tasks/result" {
		c.results[taskID] = ctx
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, string(key))
		if method == "tasks/result" && c.results[taskID] == ctx {
			delete(c.results, taskID)
		}
		c.mu.Unlock()
	}()
	if err := c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case <-ctx.Done():
		_ = c.write(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": id}})
		return ctx.Err()
	case msg, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: the server's process exited", method)
		}
		raw, err := msg.answer()
		if err == nil && out != nil {
			err = json.Unmarshal(raw, out)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		return nil
	}
}

// read reads the server's messages until its output ends.
func (c *stdioClient) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var msg rpcMessage
		if json.Unmarshal(sc.Bytes(), &msg) != nil {
			continue
		}
		switch {
		case msg.Method == "" && len(msg.ID) > 0:
			c.mu.Lock()
			ch := c.pending[string(msg.ID)]
			c.mu.Unlock()
			if ch != nil {
				ch <- msg
			}
		case msg.Method != "" && len(msg.ID) > 0:
			go c.answer(msg)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, ch := range c.pending {
		close(ch)
		delete(c.pending, k)
	}
}

// answer answers a request of the server's.
func (c *stdioClient) answer(msg rpcMessage) {
	ctx := context.Background()
	if id := relatedTask(msg.Params); id != "" {
		c.mu.Lock()
		if rctx := c.results[id]; rctx != nil {
			ctx = rctx
		}
		c.mu.Unlock()
	}
	_ = c.write(respond(ctx, c.onRequest, msg))
}

// respond is the response to the server's request msg.
func respond(ctx context.Context, on func(context.Context, string, json.RawMessage) (any, error), msg rpcMessage) map[string]any {
	resp := map[string]any{"jsonrpc": "2.0", "id": msg.ID}
	var res any
	err := error(&RPCError{Code: -32601, Message: "mcpcall answers no " + msg.Method})
	if on != nil {
		res, err = on(ctx, msg.Method, msg.Params)
	}
	var rpc *RPCError
	switch {
	case errors.As(err, &rpc):
		resp["error"] = rpc
	case err != nil:
		resp["error"] = &RPCError{Code: -32603, Message: err.Error()}
	default:
		resp["result"] = res
	}
	return resp
}

// relatedTask is the id of the task a request's params say it is for.
func relatedTask(params json.RawMessage) string {
	var p struct {
		Meta map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Meta[metaRelatedTask].TaskID
}
