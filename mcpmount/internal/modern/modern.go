package modern

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
)

// The modern dialect (2026-07-28): stateless streamable HTTP, one request
// per POST with the _meta triple (protocol version, client capabilities,
// client info), and the Tasks extension. The mount answers every method of
// it itself: server/discover, tools/list, tools/call (a JSON response, or an
// SSE stream for a client that prefers one or asked for progress, with
// multi-round-trip requests (MRTR) for a run's questions),
// tasks/get|update|cancel and subscriptions/listen. This file decodes the
// requests into the core's terms and encodes its answers; the transport
// checks and the answers are the ones the go-sdk's stateless handler gave
// (testdata/wire-2026-07-28.golden holds them).

// Request headers of the 2026-07-28 streamable HTTP transport.
const (
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
)

// Validate runs the 2026-07-28 checks of an HTTP request in the order the
// wire reference fixes: _meta keys, headers against the body, version,
// method.
func Validate(r *http.Request, msg *wire.Message, params, meta map[string]json.RawMessage, perr error) (wire.Refusal, bool) {
	metaVersion, e, bad := validateMeta(msg, meta, perr)
	if !bad {
		e, bad = validateHeaders(r, msg, params, metaVersion)
	}
	if !bad {
		e, bad = validateServed(msg, metaVersion)
	}
	return e, bad
}

// ValidateMessage runs the checks of Validate that a request on a message
// stream (stdio), which has no headers, can fail: _meta keys, version,
// method.
func ValidateMessage(msg *wire.Message, meta map[string]json.RawMessage, perr error) (wire.Refusal, bool) {
	metaVersion, e, bad := validateMeta(msg, meta, perr)
	if !bad {
		e, bad = validateServed(msg, metaVersion)
	}
	return e, bad
}

// refusal is the 2026-07-28 refusal of msg.
func refusal(msg *wire.Message, status int, code int64, message string, data any) (wire.Refusal, bool) {
	return wire.Refusal{Status: status, ID: msg.ID, Code: code, Message: message, Data: data}, true
}

// validateMeta checks the required _meta keys and returns the protocol
// version they name.
func validateMeta(msg *wire.Message, meta map[string]json.RawMessage, perr error) (string, wire.Refusal, bool) {
	if perr != nil {
		e, bad := refusal(msg, http.StatusBadRequest, wire.CodeInvalidParams, "invalid params: "+perr.Error(), nil)
		return "", e, bad
	}
	var metaVersion string
	if err := json.Unmarshal(meta[mcp.MetaKeyProtocolVersion], &metaVersion); err != nil || metaVersion == "" {
		e, bad := refusal(msg, http.StatusBadRequest, wire.CodeInvalidParams,
			fmt.Sprintf("missing or invalid _meta field %q", mcp.MetaKeyProtocolVersion), nil)
		return "", e, bad
	}
	// The body parsed, so an object is told by its first byte.
	if caps := bytes.TrimSpace(meta[mcp.MetaKeyClientCapabilities]); len(caps) == 0 || caps[0] != '{' {
		e, bad := refusal(msg, http.StatusBadRequest, wire.CodeInvalidParams,
			fmt.Sprintf("missing or invalid _meta field %q", mcp.MetaKeyClientCapabilities), nil)
		return "", e, bad
	}
	return metaVersion, wire.Refusal{}, false
}

// validateHeaders checks that the HTTP headers mirror the body.
func validateHeaders(r *http.Request, msg *wire.Message, params map[string]json.RawMessage, metaVersion string) (wire.Refusal, bool) {
	fail := func(message string) (wire.Refusal, bool) {
		return refusal(msg, http.StatusBadRequest, wire.CodeHeaderMismatch, message, nil)
	}
	hv := r.Header.Get(HeaderProtocolVersion)
	if hv == "" {
		return fail("missing required MCP-Protocol-Version header")
	}
	if hv != metaVersion {
		return fail(fmt.Sprintf("header mismatch: MCP-Protocol-Version %q does not match _meta %s %q", hv, mcp.MetaKeyProtocolVersion, metaVersion))
	}
	hm := r.Header.Values(HeaderMethod)
	if len(hm) == 0 {
		return fail("missing required Mcp-Method header")
	}
	if len(hm) > 1 || hm[0] != msg.Method {
		return fail(fmt.Sprintf("header mismatch: Mcp-Method %q does not match method %q", strings.Join(hm, ","), msg.Method))
	}
	field, ok := NameField(msg.Method)
	if !ok {
		return wire.Refusal{}, false
	}
	var bodyName string
	hasBody := json.Unmarshal(params[field], &bodyName) == nil && params[field] != nil
	hn := r.Header.Values(HeaderName)
	switch {
	case len(hn) == 0 && hasBody:
		return fail(fmt.Sprintf("missing required Mcp-Name header for method %q", msg.Method))
	case len(hn) > 1:
		return fail("more than one Mcp-Name header")
	case len(hn) == 1:
		name, ok := decodeHeaderValue(hn[0])
		if !ok {
			return fail("Mcp-Name header has invalid base64 encoding")
		}
		if !hasBody || name != bodyName {
			return fail(fmt.Sprintf("header mismatch: Mcp-Name does not match params.%s", field))
		}
		// The SDK compares Mcp-Name verbatim; give it the decoded value.
		r.Header.Set(HeaderName, name)
	}
	return wire.Refusal{}, false
}

// validateServed checks the version and the method.
func validateServed(msg *wire.Message, metaVersion string) (wire.Refusal, bool) {
	if metaVersion != wire.ProtocolVersion {
		return refusal(msg, http.StatusBadRequest, wire.CodeUnsupportedVersion, fmt.Sprintf("unsupported protocol version %q", metaVersion),
			map[string]any{"supported": []string{wire.ProtocolVersion}, "requested": metaVersion})
	}
	if !Served(msg.Method) {
		return refusal(msg, http.StatusNotFound, wire.CodeMethodNotFound, fmt.Sprintf("method not found: %q", msg.Method), nil)
	}
	return wire.Refusal{}, false
}

// decodeHeaderValue decodes the =?base64?...?= sentinel form of a header
// value; other values are returned as they are.
func decodeHeaderValue(v string) (string, bool) {
	const prefix, suffix = "=?base64?", "?="
	if len(v) < len(prefix)+len(suffix) || !strings.HasPrefix(v, prefix) || !strings.HasSuffix(v, suffix) {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(v[len(prefix) : len(v)-len(suffix)])
	if err != nil {
		return "", false
	}
	return string(b), true
}

// Serve serves one checked 2026-07-28 request.
func (d *Dialect) Serve(w http.ResponseWriter, r *http.Request, in *wire.Incoming) {
	msg := &in.Msg
	rt := table[msg.Method]
	if rt.listen {
		d.serveListen(w, r, in)
		return
	}
	// The transport checks, in the order of the go-sdk's stateless
	// handler: Accept, then Last-Event-ID, then Mcp-Name against the
	// typed params of tools/call.
	if !in.Accept.JSONOK || !in.Accept.StreamOK {
		d.Observer.Refuse(w, in, wire.Refusal{Status: http.StatusBadRequest, ID: msg.ID, Code: wire.CodeInvalidRequest,
			Message: "Accept must contain both 'application/json' and 'text/event-stream'"})
		return
	}
	if len(r.Header.Values("Last-Event-ID")) > 0 {
		d.Observer.Refuse(w, in, wire.Refusal{Status: http.StatusBadRequest, ID: msg.ID, Code: wire.CodeInvalidRequest,
			Message: "can't send Last-Event-ID for POST request"})
		return
	}
	var call *core.CallRequest
	if rt.call {
		var problem string
		if call, problem = DecodeCall(r.Header, in); problem != "" {
			wire.WriteHeaderMismatch(w, msg.ID, problem)
			return
		}
	}
	ex := &exchange{w: w, id: msg.ID}
	if in.Accept.PrefersSSE || rt.call && in.Meta["progressToken"] != nil {
		// Progress notifications need a stream.
		ex.stream = wire.NewEventStream(w)
		h := w.Header()
		h.Set("Cache-Control", "no-cache, no-transform")
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		defer d.Observer.Stream()()
		defer ex.stream.Stop()
	}
	if call != nil {
		d.serveCall(w, r, in, call, ex)
		return
	}
	res, err := d.method(r.Context(), in)
	ex.answer(d, res, err)
}

// method runs the answer of a 2026-07-28 method (table) but tools/call
// and subscriptions/listen, under the request's span and metrics.
func (d *Dialect) method(ctx context.Context, in *wire.Incoming) (mcp.Result, error) {
	declared, err := CheckMetaTriple(in.Meta)
	if err != nil {
		return nil, err
	}
	var meta map[string]any // for the trace context it may carry
	if d.Observer.Tracer != nil {
		_ = json.Unmarshal(in.Params["_meta"], &meta) // an object: Validate checked it
	}
	ctx = auth.WithSubject(ctx, in.Caller)
	answer := table[in.Msg.Method].answer // validateServed let no method without one through
	return d.Observer.Observed(ctx, in.Msg.Method, meta, in.Header, "", func(ctx context.Context) (mcp.Result, error) {
		return answer(d, ctx, in, declared)
	})
}

// serveCall serves a 2026-07-28 tools/call under the request-ownership
// tracker: the run the call starts or continues is cancelled unless its
// whole response is delivered.
func (d *Dialect) serveCall(w http.ResponseWriter, r *http.Request, in *wire.Incoming, call *core.CallRequest, ex *exchange) {
	call.Response = ex
	if ex.stream != nil {
		call.Notify = ex
	}
	d.tracker.HTTP(func(w http.ResponseWriter, r *http.Request, claim *ownership.Claim) {
		ex.w = w
		if ex.stream != nil {
			ex.stream.W = w
		}
		call.Claim = claim
		res, err := d.handleCall(r.Context(), in, call)
		if over := (*core.Overloaded)(nil); errors.As(err, &over) {
			wire.WriteOverloaded(w, in.Msg.ID, over.Rejection, http.StatusServiceUnavailable)
			return
		}
		call.Claim.Answering()
		ex.answer(d, res, err)
	}).ServeHTTP(w, r)
}

// handleCall runs callTool for a decoded 2026-07-28 tools/call, under
// the request's span and metrics.
func (d *Dialect) handleCall(ctx context.Context, in *wire.Incoming, call *core.CallRequest) (mcp.Result, error) {
	if _, err := CheckMetaTriple(in.Meta); err != nil {
		return nil, err
	}
	var meta map[string]any
	_ = json.Unmarshal(in.Params["_meta"], &meta) // an object: Validate checked it
	call.ProgressToken = meta["progressToken"]
	ctx = auth.WithSubject(ctx, in.Caller)
	return d.Observer.Observed(ctx, methods.ToolsCall, meta, in.Header, call.Name, func(ctx context.Context) (mcp.Result, error) {
		defer d.tracker.Track()()
		key, err := core.IdempotencyKeyOf(in.Meta[core.MetaIdempotencyKey])
		if err != nil {
			return nil, err
		}
		call.IdempotencyKey = key
		res, err := d.Core.CallTool(ctx, call)
		return d.Projector.AnswerCall(res, err, true)
	})
}

// DecodeCall decodes the params of a 2026-07-28 tools/call into a call
// request. A request whose typed params do not decode, or that names its
// tool without the Mcp-Name header, gets problem, the -32020 message.
func DecodeCall(h http.Header, in *wire.Incoming) (call *core.CallRequest, problem string) {
	if h.Get(HeaderName) == "" {
		return nil, `missing required Mcp-Name header for method "tools/call"`
	}
	return decodeCallParams(in)
}

// decodeCallParams decodes the params of a 2026-07-28 tools/call, on any
// transport.
func decodeCallParams(in *wire.Incoming) (call *core.CallRequest, problem string) {
	p := in.Params
	call = &core.CallRequest{Arguments: p["arguments"], ArgumentsProblem: in.ArgumentsProblem,
		Caps: core.CapsFromRaw(in.Meta[mcp.MetaKeyClientCapabilities])}
	if call.Caps.Tasks() {
		call.Task = core.TaskAccepted
	}
	ok := decodeOptional(p["name"], &call.Name) && decodeOptional(p["requestState"], &call.RequestState) &&
		decodeOptional(p["inputResponses"], &call.InputResponses)
	if !ok {
		return nil, `failed to extract name from parameters for method "tools/call"`
	}
	return call, ""
}

// decodeOptional decodes raw into v unless it is absent or null, and
// reports whether it decoded.
func decodeOptional(raw json.RawMessage, v any) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	return json.Unmarshal(raw, v) == nil
}

// exchange writes the answer of one 2026-07-28 request: JSON, or
// events on its SSE stream.
type exchange struct {
	w      http.ResponseWriter
	id     json.RawMessage
	stream *wire.EventStream // nil: a JSON response
}

// answer writes the response: res, or err. On a stream, a result or an
// error without an HTTP status is an event; an error with one (SEP-2575)
// is a JSON body with that status, as the go-sdk writes it. A request
// whose client went away gets nothing.
func (ex *exchange) answer(m *Dialect, res mcp.Result, err error) {
	if err == nil {
		m.annotateServerInfo(res)
	} else if errors.Is(err, context.Canceled) {
		return
	}
	body, status := wire.EncodeResponse(ex.id, res, err)
	if ex.stream == nil {
		wire.WriteJSON(ex.w, body, status)
		return
	}
	if status != 0 {
		ex.w.Header().Set("Content-Type", "application/json")
		ex.stream.WriteHeader(status)
		_, _ = ex.stream.Write(body)
		return
	}
	ex.stream.Event(body)
}

// KeepAlive starts the keep-alives of the request's SSE stream, if it
// has one (core.Response).
func (ex *exchange) KeepAlive(interval time.Duration) (stop func()) {
	if ex.stream == nil {
		return func() {}
	}
	ex.stream.KeepAlive(interval)
	return ex.stream.Stop
}

// NotifyProgress sends a progress notification as an event of the
// request's stream.
func (ex *exchange) NotifyProgress(_ context.Context, params *mcp.ProgressNotificationParams) error {
	b, err := wire.EncodeNotification(methods.Progress, params)
	if err != nil {
		return err
	}
	ex.stream.Event(b)
	return nil
}

// CheckMetaTriple decodes the _meta clientInfo (when present) and
// clientCapabilities as the SDK's request validation does, with its
// answers, and reports whether the capabilities declare the Tasks
// extension.
func CheckMetaTriple(meta map[string]json.RawMessage) (tasks bool, err error) {
	if raw, ok := meta[mcp.MetaKeyClientInfo]; ok && string(raw) != "null" {
		var info mcp.Implementation
		if json.Unmarshal(raw, &info) != nil {
			return false, core.InvalidParams(`invalid _meta field "` + mcp.MetaKeyClientInfo + `"`)
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
		return false, core.InvalidParams(`missing or invalid _meta field "` + mcp.MetaKeyClientCapabilities + `"`)
	}
	_, tasks = caps.Extensions[core.ExtensionTasks]
	return tasks, nil
}

// discoverResult answers server/discover.
type discoverResult struct {
	mcp.ResultBase
	ResultType        string                  `json:"resultType"`
	Meta              mcp.Meta                `json:"_meta,omitempty"`
	TTLMs             int64                   `json:"ttlMs"`
	CacheScope        string                  `json:"cacheScope,omitempty"`
	SupportedVersions []string                `json:"supportedVersions"`
	Capabilities      *mcp.ServerCapabilities `json:"capabilities"`
	Instructions      string                  `json:"instructions,omitempty"`
}

// GetMeta and SetMeta give annotateServerInfo the result's own _meta.
func (r *discoverResult) GetMeta() map[string]any     { return r.Meta }
func (r *discoverResult) SetMeta(meta map[string]any) { r.Meta = meta }

// discover answers server/discover: the versions the endpoint serves, the
// server's capabilities and instructions, cacheable for the CacheTTL.
func (d *Dialect) discover() mcp.Result {
	return &discoverResult{ResultType: wire.ResultComplete, TTLMs: d.CacheTTLMs, CacheScope: "public",
		SupportedVersions: mcp.SupportedProtocolVersions(), Capabilities: d.Capabilities, Instructions: d.Instructions}
}

// annotateServerInfo names the server in a result's _meta, as the SDK
// does for every 2026-07-28 result (SEP-2575), unless the result names one.
func (d *Dialect) annotateServerInfo(res mcp.Result) {
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
	meta[mcp.MetaKeyServerInfo] = d.Implementation
	res.SetMeta(meta)
}
