package ownership

import (
	"context"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/signals"
)

// scriptedConn is an mcp.Connection whose Read returns the queued messages
// and then io.EOF, and whose Write of a response calls during before it
// returns (to interleave the end of input with a write in progress).
type scriptedConn struct {
	in     chan jsonrpc.Message
	during func()
}

func (c *scriptedConn) Read(context.Context) (jsonrpc.Message, error) {
	msg, ok := <-c.in
	if !ok {
		return nil, io.EOF
	}
	return msg, nil
}

func (c *scriptedConn) Write(context.Context, jsonrpc.Message) error {
	if c.during != nil {
		c.during()
	}
	return nil
}

func (c *scriptedConn) Close() error      { return nil }
func (c *scriptedConn) SessionID() string { return "" }

type scriptedTransport struct{ conn *scriptedConn }

func (t scriptedTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// TestStdioEOFDuringResponseWrite: a client that reads a response and closes
// its input at once ends the input while the response write is still
// returning. The call's response was delivered, so the run it owns must be
// released, not cancelled.
func TestStdioEOFDuringResponseWrite(t *testing.T) {
	rec := newRecorder()
	tr := NewTracker(rec.cancel, nil)
	inner := &scriptedConn{in: make(chan jsonrpc.Message, 1)}
	var claim *Claim
	route := func(_ *jsonrpc.Request, c *Claim, _ func(context.Context, jsonrpc.Message) error) bool {
		claim = c
		return false
	}
	conn, err := tr.Transport(scriptedTransport{inner}, route).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id, _ := jsonrpc.MakeID(float64(1))
	inner.in <- &jsonrpc.Request{ID: id, Method: "tools/call"}
	if _, err := conn.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	claim.Own(signals.Subject{Tenant: "t"}, "t/task")

	// The write is in progress when the input ends.
	inner.during = func() {
		close(inner.in)
		if _, err := conn.Read(context.Background()); err != io.EOF {
			t.Errorf("read after the input ended = %v", err)
		}
	}
	if err := conn.Write(context.Background(), &jsonrpc.Response{ID: id, Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	tr.Wait()
	if got := rec.cancelled(); len(got) != 0 {
		t.Fatalf("runs cancelled although the response was written: %v", got)
	}
}
