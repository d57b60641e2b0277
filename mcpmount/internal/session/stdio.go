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
func (d *Dialect) ServeStdio(ctx context.Context, caller signals.Subject, in io.ReadCloser, out io.WriteCloser, divert Divert) error {
	ctx = auth.WithSubject(ctx, caller)
	t := d.tracker.Transport(&mcp.IOTransport{Reader: in, Writer: out}, d.stdioRoute(ctx, caller, divert))
	err := d.server.Run(ctx, t)
	d.tracker.Wait()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve MCP over stdio: %w", err)
	}
	return nil
}

// stdioRoute routes the calls of a message stream, each with its claim:
// those divert takes go to their dialect, served in a goroutine of their
// own; the others go on to the go-sdk server with a record (requestSide)
// that notes the 2025-11-25 task dialect's field (params.task of
// tools/call, capabilities.tasks of initialize), which the SDK's params
// types drop, as serveSDK does on HTTP.
func (d *Dialect) stdioRoute(ctx context.Context, caller signals.Subject, divert Divert) ownership.Route {
	return func(req *jsonrpc.Request, claim *ownership.Claim, send func(context.Context, jsonrpc.Message) error) bool {
		if divert.Takes != nil && divert.Takes(req) {
			done := d.tracker.Track()
			go func() {
				defer done()
				divert.Serve(ctx, caller, req, claim, send)
			}()
			return true
		}
		side := &requestSide{claim: claim, taskField: stdioTaskField(req)}
		req.Extra = &mcp.RequestExtra{Header: http.Header{claimHeader: {d.requests.add(side)}}}
		return false
	}
}

// stdioTaskField reports whether a call read from a message stream carries
// the 2025-11-25 task dialect's field (taskRequested).
func stdioTaskField(req *jsonrpc.Request) bool {
	if table[req.Method].taskField == nil {
		return false
	}
	var params map[string]json.RawMessage
	return json.Unmarshal(req.Params, &params) == nil && taskRequested(req.Method, params)
}
