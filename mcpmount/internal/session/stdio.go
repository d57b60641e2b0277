package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// ServeStdio serves one MCP client over a newline-delimited message stream
// (stdin and stdout for a local client) as caller, until the input ends or
// ctx is done. The request-ownership rule holds as on HTTP: a call owns the
// run it starts or continues until its response is written; a
// notifications/cancelled naming the call, or the end of the input, cancels
// the runs the unanswered calls own (reason mcp-request-cancelled).
// ServeStdio returns once those cancellations are done. Nothing but MCP
// messages is written to out.
func (m *Dialect) ServeStdio(ctx context.Context, caller signals.Subject, in io.ReadCloser, out io.WriteCloser) error {
	t := legacyTaskTransport{m.tracker.Transport(&mcp.IOTransport{Reader: in, Writer: out})}
	err := m.server.Run(auth.WithSubject(ctx, caller), t)
	m.tracker.Wait()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve MCP over stdio: %w", err)
	}
	return nil
}

// legacyTaskTransport marks the requests that carry the 2025-11-25 task
// dialect's field (params.task of tools/call, capabilities.tasks of
// initialize) in their extra headers, as ServeHTTP does for HTTP: the
// SDK's params types drop it.
type legacyTaskTransport struct{ mcp.Transport }

// Connect wraps the connection.
func (t legacyTaskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return legacyTaskConn{c}, nil
}

type legacyTaskConn struct{ mcp.Connection }

func (c legacyTaskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || req.Method != "tools/call" && req.Method != "initialize" {
		return msg, err
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil || !legacyTaskRequested(req.Method, params) {
		return msg, nil
	}
	extra, _ := req.Extra.(*mcp.RequestExtra)
	if extra == nil {
		extra = &mcp.RequestExtra{}
		req.Extra = extra
	}
	if extra.Header == nil {
		extra.Header = http.Header{}
	}
	extra.Header.Set(legacyTaskHeader, "1")
	return req, nil
}
