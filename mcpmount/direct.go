package mcpmount

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// The Tasks extension's methods (tasks/get, tasks/update, tasks/cancel) are
// the hot path of every client that polls a task, and tools/call starts
// every run. A 2026-07-28 request for one of them that asks for a JSON
// response is answered by the mount itself: the same method handlers the
// SDK would call (getTaskOf, updateTaskOf, cancelTaskOf, callTool), under
// the same span and metrics (observed), without the SDK's stateless
// session. Building one per request, and decoding the body again with the
// SDK's JSON decoder, cost more than the whole HTTP exchange around it.
// Nothing changes on the wire: the answer is byte for byte the one the SDK
// writes (TestDirectMethodsMatchSDK), errors included, with their SEP-2575
// HTTP statuses.
//
// Requests the SDK would refuse at its transport (an Accept header that
// does not list both JSON and SSE), requests that prefer an SSE response
// and MRTR retries of tools/call (inputResponses, requestState) still go
// to the SDK.

// directMethod reports whether method is answered by serveDirect.
func directMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		return true
	}
	return false
}

// servesDirect reports whether a checked 2026-07-28 request of a
// directMethod is answered by serveDirect rather than the SDK.
func (m *Mount) servesDirect(r *http.Request) bool {
	if m.sdkOnly {
		return false
	}
	jsonOK, streamOK := acceptsOf(r.Header.Values("Accept"))
	return jsonOK && streamOK && !prefersSSE(r)
}

// serveDirect answers one checked 2026-07-28 tasks/* request (see
// directMethod): the _meta triple is decoded as the SDK decodes it (-32602
// for a clientInfo or clientCapabilities it cannot read), then the method's
// handler runs with the caller in its context.
func (m *Mount) serveDirect(w http.ResponseWriter, r *http.Request, caller signals.Subject, msg *rpcMessage,
	params, rawMeta map[string]json.RawMessage) {
	declared, err := checkMetaTriple(rawMeta)
	if err != nil {
		writeDirect(w, msg.ID, nil, err)
		return
	}
	var meta map[string]any // for the trace context it may carry
	if m.tracer != nil {
		_ = json.Unmarshal(params["_meta"], &meta) // an object: validateModern checked it
	}
	ctx := auth.WithSubject(r.Context(), caller)
	res, err := m.observed(ctx, msg.Method, meta, r.Header, "", func(ctx context.Context) (mcp.Result, error) {
		switch msg.Method {
		case "tasks/get":
			return m.getTaskOf(ctx, declared, params["taskId"])
		case "tasks/update":
			return m.updateTaskOf(ctx, declared, params["taskId"], params["inputResponses"])
		default:
			return m.cancelTaskOf(ctx, declared, params["taskId"])
		}
	})
	if err == nil {
		m.annotateServerInfo(res)
	}
	writeDirect(w, msg.ID, res, err)
}

// checkMetaTriple decodes the _meta clientInfo (when present) and
// clientCapabilities as the SDK's request validation does, with its
// answers, and reports whether the capabilities declare the Tasks
// extension.
func checkMetaTriple(meta map[string]json.RawMessage) (tasks bool, err error) {
	if raw, ok := meta[mcp.MetaKeyClientInfo]; ok && string(raw) != "null" {
		var info mcp.Implementation
		if json.Unmarshal(raw, &info) != nil {
			return false, errInvalidParams(`invalid _meta field "` + mcp.MetaKeyClientInfo + `"`)
		}
	}
	var caps struct {
		mcp.ClientCapabilities
		// Roots shadows the embedded field as the SDK's decoding does
		// (the roots capability itself is deprecated).
		Roots *struct {
			ListChanged bool `json:"listChanged,omitempty"`
		} `json:"roots,omitempty"`
	}
	if json.Unmarshal(meta[mcp.MetaKeyClientCapabilities], &caps) != nil {
		return false, errInvalidParams(`missing or invalid _meta field "` + mcp.MetaKeyClientCapabilities + `"`)
	}
	_, tasks = caps.Extensions[ExtensionTasks]
	return tasks, nil
}

// directCall reports whether the params of a 2026-07-28 tools/call are
// answered by callHandler: a string name, and no inputResponses or
// requestState (MRTR rounds, whose typed decoding stays the SDK's).
func directCall(params map[string]json.RawMessage) bool {
	var name string
	if json.Unmarshal(params["name"], &name) != nil {
		return false
	}
	_, answers := params["inputResponses"]
	_, state := params["requestState"]
	return !answers && !state
}

// callHandler is the handler of one checked 2026-07-28 tools/call (see
// directCall) with a JSON response. serveSDK runs it where it would run
// the SDK's, under the same request ownership, admission answer and
// plain-error rewriting; it calls callTool as the SDK's middleware does.
func (m *Mount) callHandler(id json.RawMessage, params, rawMeta map[string]json.RawMessage) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := checkMetaTriple(rawMeta); err != nil {
			writeDirect(w, id, nil, err)
			return
		}
		var meta map[string]any
		_ = json.Unmarshal(params["_meta"], &meta) // an object: validateModern checked it
		p := &mcp.CallToolParamsRaw{Meta: meta, Arguments: params["arguments"]}
		_ = json.Unmarshal(params["name"], &p.Name) // a string: directCall checked it
		claim := m.tracker.Lookup(r.Header)
		req := &mcp.CallToolRequest{Params: p, Extra: &mcp.RequestExtra{Header: r.Header}}
		res, err := m.observed(r.Context(), "tools/call", meta, r.Header, p.Name, func(ctx context.Context) (mcp.Result, error) {
			defer m.tracker.Track()()
			return m.callTool(ctx, req, claim, callOptions{version: ProtocolVersion})
		})
		if err == nil {
			m.annotateServerInfo(res)
		}
		writeDirect(w, id, res, err)
	})
}

// annotateServerInfo names the server in a result's _meta, as the SDK
// does for every 2026-07-28 result (SEP-2575), unless the result names one.
func (m *Mount) annotateServerInfo(res mcp.Result) {
	if res == nil {
		return
	}
	meta := res.GetMeta()
	if _, ok := meta[mcp.MetaKeyServerInfo]; ok {
		return
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta[mcp.MetaKeyServerInfo] = m.impl
	res.SetMeta(meta)
}

// writeDirect writes the JSON-RPC response to the request id: res, or
// err with the HTTP status SEP-2575 gives its code (404 for -32601; 400 for
// -32602, -32021 and -32022; 200 otherwise). An error that is not a
// JSON-RPC error is an internal error.
func writeDirect(w http.ResponseWriter, id json.RawMessage, res mcp.Result, err error) {
	type wireResponse struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *jsonrpc.Error  `json:"error,omitempty"`
	}
	out := wireResponse{JSONRPC: "2.0", ID: canonicalID(id)}
	status := http.StatusOK
	if err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			rpcErr = errInternal()
		}
		out.Error = rpcErr
		switch rpcErr.Code {
		case codeMethodNotFound:
			status = http.StatusNotFound
		case codeInvalidParams, codeMissingCapabity, codeUnsupportedVer:
			status = http.StatusBadRequest
		}
	} else {
		out.Result = res
	}
	body, merr := marshalUnescaped(out)
	if merr != nil {
		out.Result, out.Error, status = nil, errInternal(), http.StatusOK
		body, _ = marshalUnescaped(out)
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// marshalUnescaped is json.Marshal without HTML escaping, as the SDK
// encodes its messages.
func marshalUnescaped(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// canonicalID is a request id (a string or an integer; checkEnvelope
// checked it) as the SDK echoes it: decoded and encoded again.
func canonicalID(id json.RawMessage) json.RawMessage {
	id = bytes.TrimSpace(id)
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) != nil {
			return id
		}
		if b, err := marshalUnescaped(s); err == nil {
			return b
		}
		return id
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return id
	}
	return strconv.AppendInt(nil, n, 10)
}

// acceptsOf reads Accept header values as the SDK's transport does: the
// response types they allow.
func acceptsOf(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}
