package modern

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/signals"
)

// Takes reports whether req, read from a message stream (stdio), is this
// dialect's: a request whose _meta names a per-request protocol version.
// subscriptions/listen is left to the session dialect's front door, which
// holds the stream's notifications.
func Takes(req *jsonrpc.Request) bool {
	if !req.IsCall() || table[req.Method].listen {
		return false
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	return json.Unmarshal(req.Params, &p) == nil && p.Meta[mcp.MetaKeyProtocolVersion] != nil
}

// ServeMessage serves one 2026-07-28 request read from a message stream
// (stdio; Takes said it is one) as caller, and writes its answer with
// send: the same checks, methods and answers as over HTTP, but for the
// checks of headers a stream has none of. claim is the request's
// ownership claim (the stream's tracker settles it when the answer is
// written, or when the client cancels the request or the stream ends);
// once the claim is gone, the request is abandoned and nothing is written.
// Progress of a call with a progressToken is sent as notifications on the
// stream.
func (d *Dialect) ServeMessage(ctx context.Context, caller signals.Subject, req *jsonrpc.Request, claim *ownership.Claim, send wire.Send) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer claim.AfterGone(cancel)()
	id, _ := json.Marshal(req.ID.Raw())
	in := &wire.Incoming{Caller: caller, Msg: wire.Message{JSONRPC: "2.0", ID: id, Method: req.Method, Params: req.Params}, Modern: true}
	var perr error
	in.Params, in.Meta, perr = wire.DecodeParams(req.Params)
	if e, bad := ValidateMessage(&in.Msg, in.Meta, perr); bad {
		d.sendAnswer(ctx, send, id, nil, refusalError(e))
		return
	}
	if !table[req.Method].call {
		res, err := d.method(ctx, in)
		d.sendAnswer(ctx, send, id, res, err)
		return
	}
	if aerr := catalog.CheckNumbers(in.Params["arguments"]); aerr != nil {
		// A tool-input error, answered once the tool is known.
		in.ArgumentsProblem = aerr
		in.Params["arguments"] = json.RawMessage("{}")
	}
	call, problem := decodeCallParams(in)
	if problem != "" {
		d.sendAnswer(ctx, send, id, nil, &jsonrpc.Error{Code: wire.CodeInvalidParams, Message: problem})
		return
	}
	call.Claim = claim
	if in.Meta["progressToken"] != nil {
		call.Notify = streamNotifier{send}
	}
	res, err := d.handleCall(ctx, in, call)
	d.sendAnswer(ctx, send, id, res, err)
}

// sendAnswer writes the response to request id: res, or err. A request
// whose client went away gets nothing.
func (d *Dialect) sendAnswer(ctx context.Context, send wire.Send, id json.RawMessage, res mcp.Result, err error) {
	if err == nil {
		d.annotateServerInfo(res)
	} else if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return
	}
	body, _ := wire.EncodeResponse(id, res, err)
	msg, derr := jsonrpc.DecodeMessage(body)
	if derr != nil {
		d.Log.Error("encode a 2026-07-28 answer on the message stream", zap.Error(derr))
		return
	}
	_ = send(context.WithoutCancel(ctx), msg)
}

// streamNotifier sends a call's progress notifications on the message
// stream.
type streamNotifier struct{ send wire.Send }

// NotifyProgress implements core.ProgressNotifier.
func (n streamNotifier) NotifyProgress(ctx context.Context, params *mcp.ProgressNotificationParams) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return n.send(ctx, &jsonrpc.Request{Method: methods.Progress, Params: raw})
}

// refusalError is a refusal as the JSON-RPC error a stream answers.
func refusalError(e wire.Refusal) error {
	err := &jsonrpc.Error{Code: e.Code, Message: e.Message}
	if e.Data != nil {
		err.Data, _ = json.Marshal(e.Data)
	}
	return err
}
