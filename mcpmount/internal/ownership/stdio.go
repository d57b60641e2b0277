package ownership

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
)

// Transport wraps a message transport (stdio) so that each incoming call
// gets a claim, which settles when its response is written (delivered if
// the write succeeded), when a notifications/cancelled names the call (not
// delivered; its response is then dropped, as the client no longer waits
// for it), or when the connection's input ends (not delivered). Each call
// goes to route with its claim before the connection's reader sees it (a
// nil route takes none).
func (t *Tracker) Transport(inner mcp.Transport, route Route) mcp.Transport {
	return &transport{inner: inner, t: t, route: route}
}

// Route is handed each call a Transport reads, with its claim. It reports
// whether it serves the call itself, writing the answer with send (which
// settles the claim as the connection's writes do); the connection's
// reader never sees such a call. A call it does not take is returned by
// the connection's Read, and its claim settles as the reader's answer to
// it is written.
type Route func(req *jsonrpc.Request, claim *Claim, send func(context.Context, jsonrpc.Message) error) (taken bool)

type transport struct {
	inner mcp.Transport
	t     *Tracker
	route Route
}

func (tr *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := tr.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &connection{Connection: c, t: tr.t, route: tr.route, ctx: context.WithoutCancel(ctx), calls: map[string]*Claim{},
		cancelled: map[string]bool{}}, nil
}

type connection struct {
	mcp.Connection
	t     *Tracker
	route Route
	ctx   context.Context // the connection's context, without its cancellation

	mu    sync.Mutex
	calls map[string]*Claim // by request id
	// cancelled holds the calls the client cancelled whose response has
	// not been written; that response is dropped (the client is not
	// waiting for it, and the SDK would answer an error with code 0).
	cancelled map[string]bool
}

// idKey names a JSON-RPC id, keeping 1 and "1" apart.
func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

// Read returns the next message for the connection's reader, handing on
// the way each call to the route.
func (c *connection) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.closeAll()
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		if !req.ID.IsValid() {
			c.notified(req)
			return msg, nil
		}
		if claim := c.open(req.ID); c.route == nil || !c.route(req, claim, c.Write) {
			return req, nil
		}
	}
}

// open opens the claim of call id.
func (c *connection) open(id jsonrpc.ID) *Claim {
	claim := c.t.Open(c.ctx)
	c.mu.Lock()
	old := c.calls[idKey(id)]
	c.calls[idKey(id)] = claim
	delete(c.cancelled, idKey(id))
	c.mu.Unlock()
	if old != nil {
		// A reused id: the earlier call's response was never written.
		old.Settle(false)
	}
	return claim
}

// notified acts on a notification: a notifications/cancelled cancels the
// call it names.
func (c *connection) notified(req *jsonrpc.Request) {
	if req.Method == methods.Cancelled {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil && p.RequestID != nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.cancel(id)
			}
		}
	}
}

func (c *connection) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.Connection.Write(ctx, msg)
	}
	// Take the call out of the in-flight set before writing: the client may
	// read the response and close its input at once, and the end of input
	// must not settle a call whose response is being delivered.
	key := idKey(resp.ID)
	c.mu.Lock()
	if c.cancelled[key] {
		delete(c.cancelled, key)
		c.mu.Unlock()
		return nil
	}
	claim := c.calls[key]
	delete(c.calls, key)
	c.mu.Unlock()
	err := c.Connection.Write(ctx, msg)
	if claim != nil {
		claim.Settle(err == nil)
	}
	return err
}

func (c *connection) Close() error {
	c.closeAll()
	return c.Connection.Close()
}

// cancel handles a notifications/cancelled naming call id: the call's run
// is cancelled, and its response will not be sent. An id with no call in
// flight (unknown or answered already) is ignored.
func (c *connection) cancel(id jsonrpc.ID) {
	key := idKey(id)
	c.mu.Lock()
	claim := c.calls[key]
	if claim != nil {
		delete(c.calls, key)
		c.cancelled[key] = true
	}
	c.mu.Unlock()
	if claim != nil {
		claim.Settle(false)
	}
}

// closeAll settles every call still in flight as not delivered.
func (c *connection) closeAll() {
	c.mu.Lock()
	calls := c.calls
	c.calls = map[string]*Claim{}
	c.mu.Unlock()
	for _, claim := range calls {
		claim.Settle(false)
	}
}
