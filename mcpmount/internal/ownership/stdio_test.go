package ownership

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestStdioRoute: each call read goes to the route with a claim of its
// own. A call the route takes never reaches the reader, and its answer
// written with send settles its claim as delivered; a call it leaves is
// read, and its claim settles once the reader's answer is written.
func TestStdioRoute(t *testing.T) {
	tr := NewTracker(newRecorder().cancel, nil)
	inner := &scriptedConn{in: make(chan jsonrpc.Message, 2)}
	claims := map[string]*Claim{}
	sends := map[string]func(context.Context, jsonrpc.Message) error{}
	route := func(req *jsonrpc.Request, c *Claim, send func(context.Context, jsonrpc.Message) error) bool {
		claims[req.Method], sends[req.Method] = c, send
		return req.Method == "taken"
	}
	conn, err := tr.Transport(scriptedTransport{inner}, route).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	taken, _ := jsonrpc.MakeID(float64(1))
	left, _ := jsonrpc.MakeID(float64(2))
	inner.in <- &jsonrpc.Request{ID: taken, Method: "taken"}
	inner.in <- &jsonrpc.Request{ID: left, Method: "left"}
	msg, err := conn.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if req, _ := msg.(*jsonrpc.Request); req == nil || req.Method != "left" {
		t.Fatalf("read %v, want the call the route left", msg)
	}
	if claims["taken"] == nil || claims["left"] == nil || claims["taken"] == claims["left"] {
		t.Fatalf("claims %v, want one for each call", claims)
	}
	settled := map[string]bool{}
	for name, c := range claims {
		c.AfterSettle(func(delivered bool) { settled[name] = delivered })
	}
	if err := sends["taken"](context.Background(), &jsonrpc.Response{ID: taken, Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := conn.Write(context.Background(), &jsonrpc.Response{ID: left, Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if !settled["taken"] || !settled["left"] {
		t.Fatalf("settled as delivered: %v, want both", settled)
	}
}
