package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/signals"
)

// Divert hands the requests of a message stream that belong to another
// dialect to that dialect's front door: Takes picks them, Serve serves one
// (in a goroutine of its own, under the request-ownership tracker) and
// writes its answer with send. The zero Divert takes nothing.
type Divert struct {
	Takes func(req *jsonrpc.Request) bool
	Serve func(ctx context.Context, caller signals.Subject, req *jsonrpc.Request, claim *ownership.Claim, send wire.Send)
}

// ServeStdio serves one MCP client over a newline-delimited message stream
// (stdin and stdout for a local client) as caller, until the input ends or
// ctx is done: the requests divert takes go to their dialect, the others
// to the session dialect's go-sdk server. The request-ownership rule holds as
// on HTTP: a call owns the run it starts or continues until its response
// is written; a notifications/cancelled naming the call, or the end of the
// input, cancels the runs the unanswered calls own (reason
// mcp-request-cancelled). ServeStdio returns once those cancellations are
// done. Nothing but MCP messages is written to out.
func (m *Dialect) ServeStdio(ctx context.Context, caller signals.Subject, in io.ReadCloser, out io.WriteCloser, divert Divert) error {
	ctx = auth.WithSubject(ctx, caller)
	var t mcp.Transport = m.tracker.Transport(&mcp.IOTransport{Reader: in, Writer: out})
	if divert.Takes != nil {
		t = divertTransport{Transport: t, ctx: ctx, caller: caller, tracker: m.tracker, divert: divert}
	}
	err := m.server.Run(ctx, taskFieldTransport{t, m.tracker})
	m.tracker.Wait()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve MCP over stdio: %w", err)
	}
	return nil
}

// taskFieldTransport notes, for the requests that carry the 2025-11-25
// task dialect's field (params.task of tools/call, capabilities.tasks of
// initialize), which the SDK's params types drop, a requestSide attached
// to the request's ownership claim, as serveSDK does on HTTP. It wraps the
// tracker's transport, which gave each call its claim.
type taskFieldTransport struct {
	mcp.Transport
	tracker *ownership.Tracker
}

// Connect wraps the connection.
func (t taskFieldTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return taskFieldConn{c, t.tracker}, nil
}

type taskFieldConn struct {
	mcp.Connection
	tracker *ownership.Tracker
}

func (c taskFieldConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || req.Method != "tools/call" && req.Method != "initialize" {
		return msg, err
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil || !taskRequested(req.Method, params) {
		return msg, nil
	}
	if extra, _ := req.Extra.(*mcp.RequestExtra); extra != nil {
		c.tracker.Lookup(extra.Header).Attach(&requestSide{taskField: true})
	}
	return req, nil
}

// divertTransport hands the requests its Divert takes to their front
// door; it wraps the tracker's transport, which gave each call its claim
// and settles it when the answer is written.
type divertTransport struct {
	mcp.Transport
	ctx     context.Context
	caller  signals.Subject
	tracker *ownership.Tracker
	divert  Divert
}

// Connect wraps the connection.
func (t divertTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return divertConn{Connection: c, t: t}, nil
}

type divertConn struct {
	mcp.Connection
	t divertTransport
}

// Read returns the next message for the go-sdk server, serving on the way
// the requests the Divert takes.
func (c divertConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok || !c.t.divert.Takes(req) {
			return msg, err
		}
		var claim *ownership.Claim
		if extra, _ := req.Extra.(*mcp.RequestExtra); extra != nil {
			claim = c.t.tracker.Lookup(extra.Header)
		}
		done := c.t.tracker.Track()
		go func() {
			defer done()
			c.t.divert.Serve(c.t.ctx, c.t.caller, req, claim, c.Connection.Write)
		}()
	}
}
