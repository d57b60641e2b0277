package mcpmount

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/httpgate"
	"github.com/openwop/temporal-mcp/mcpmount/ownership"
	"github.com/openwop/temporal-mcp/signals"
)

// Request headers of the 2026-07-28 streamable HTTP transport.
const (
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
)

// modernMethods are the methods served to 2026-07-28 requests. Everything
// else (tasks/result, tasks/list, initialize, ping, prompts/*, ...) is
// -32601 / 404.
func modernMethod(method string) bool {
	switch method {
	case "server/discover", "tools/list", "tools/call", "tasks/get", "tasks/update", "tasks/cancel",
		"subscriptions/listen":
		return true
	}
	return false
}

// nameField is the params field a method's Mcp-Name header mirrors.
func nameField(method string) (string, bool) {
	switch method {
	case "tools/call", "prompts/get":
		return "name", true
	case "resources/read":
		return "uri", true
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "taskId", true
	}
	return "", false
}

// rpcMessage is one decoded JSON-RPC message of a POST body.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	// Result and Error are set on a response (a client answering a
	// request of the server).
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// rpcError is a wire error with the request id (null when unknown).
type rpcError struct {
	status  int
	id      json.RawMessage
	code    int64
	message string
	data    any
}

func writeRPCError(w http.ResponseWriter, e rpcError) {
	id := e.id
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body := map[string]any{"code": e.code, "message": e.message}
	if e.data != nil {
		body["data"] = e.data
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": body})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}

// ServeHTTP serves one MCP request. Checks run in this order: Host and
// Origin (403, internal/httpgate's gate shared with the REST API), method
// (405; GET and DELETE only for a session-era session), credential (401),
// content type (415), body (413, 408, -32700 for a body that is not JSON or
// nests deeper than maxNesting, -32600 for a message that is not a JSON-RPC
// request: an id that is not a string or an integer, an empty batch), the
// session of a session-era request that names one (404 unless it is live
// and the caller's), notifications (202), then for 2026-07-28 requests the
// _meta keys (-32602), the headers against the body (-32020), the version
// (-32022) and the method (-32601, 404), and for every request a number
// too large for a 64-bit float (-32602; in tools/call arguments it is set
// aside for the tool-input error, a CallToolResult with isError, that
// callTool answers once it knows the tool). Method-specific checks (the
// Tasks extension gate, then the task lookup) happen in the method handlers.
//
// 2026-07-28 requests are served by the stateless SDK handler, but for
// tools/call and tasks/get|update|cancel with a JSON response, which the
// mount's handlers answer directly (direct.go). Session-era requests go
// to the stateful SDK handler when they belong to a session (an
// Mcp-Session-Id header, or an initialize, which starts one), and to the
// stateless one otherwise, as before sessions existed.
//
// Every refusal is a JSON-RPC error with a JSON body, the SDK's transport
// errors included (see plainErrorWriter), and so is a tools/call refused by
// admission control (Options.Admission): status 503 with Retry-After.
func (m *Mount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg rpcMessage // its method labels a refusal's metrics
	reject := func(e rpcError) { writeRPCError(w, e) }
	if m.metrics != nil {
		start := time.Now()
		reject = func(e rpcError) {
			writeRPCError(w, e)
			m.metrics.Request(methodLabel(msg.Method), OutcomeRejected, time.Since(start))
		}
	}
	if rej := m.gate.CheckHostOrigin(r); rej != nil {
		reject(rpcError{status: rej.Status, code: codeInvalidRequest, message: rej.Message})
		return
	}
	session := m.legacySession(r)
	if r.Method != http.MethodPost {
		if session != "" && (r.Method == http.MethodGet || r.Method == http.MethodDelete) {
			m.serveSessionStream(w, r, session)
			return
		}
		w.Header().Set("Allow", http.MethodPost)
		reject(rpcError{status: http.StatusMethodNotAllowed, code: codeInvalidRequest,
			message: fmt.Sprintf("method %s not allowed: the MCP endpoint takes POST (GET and DELETE only with the %s of a session-era session)",
				r.Method, headerSessionID)})
		return
	}
	caller, err := m.authenticate(r)
	if err != nil {
		auth.Challenge(w)
		reject(rpcError{status: http.StatusUnauthorized, code: codeInvalidRequest, message: "unauthorized: " + err.Error()})
		return
	}
	if !httpgate.JSONContentType(r) {
		reject(rpcError{status: http.StatusUnsupportedMediaType, code: codeInvalidRequest,
			message: httpgate.UnsupportedMediaType(r).Message})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			reject(rpcError{status: http.StatusRequestEntityTooLarge, code: codeInvalidRequest,
				message: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)})
		case httpgate.IsTimeout(err):
			reject(rpcError{status: http.StatusRequestTimeout, code: codeInvalidRequest,
				message: "the request body did not arrive in time"})
		default:
			reject(rpcError{status: http.StatusBadRequest, code: codeInvalidRequest,
				message: "failed to read the request body: " + err.Error()})
		}
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Del(legacyTaskHeader)

	if depth := nestingDepth(body); depth > maxNesting {
		reject(rpcError{status: http.StatusBadRequest, code: codeParseError,
			message: fmt.Sprintf("parse error: the message nests %d levels deep; at most %d are accepted", depth, maxNesting)})
		return
	}
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
		if m.modernHeader(r) {
			reject(rpcError{status: http.StatusBadRequest, code: codeInvalidRequest,
				message: "JSON-RPC batches are not supported in protocol " + ProtocolVersion})
			return
		}
		if e, bad := checkBatch(trimmed); bad {
			reject(e)
			return
		}
		// A legacy batch: the SDK decides.
		if session != "" {
			if m.checkSession(w, session, principal(caller), nil) {
				m.serveSDK(w, r, caller, nil, m.sessionRoute(session))
			}
			return
		}
		m.serveSDK(w, r, caller, nil, sdkRoute{handler: m.jsonHandler})
		return
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		reject(rpcError{status: http.StatusBadRequest, code: codeParseError, message: "parse error: " + err.Error()})
		return
	}
	if session != "" && msg.Method == "" && isResponse(&msg) {
		// A session-era client answering a request of the server (an
		// elicitation): the SDK matches it to the waiting request.
		if m.checkSession(w, session, principal(caller), nil) {
			m.serveSDK(w, r, caller, nil, m.sessionRoute(session))
		}
		return
	}
	if e, bad := checkEnvelope(&msg); bad {
		reject(e)
		return
	}
	if session != "" && !m.checkSession(w, session, principal(caller), msg.ID) {
		return
	}
	if len(msg.ID) == 0 {
		if session != "" {
			// notifications/initialized, notifications/cancelled, ...
			// belong to the session.
			m.serveSDK(w, r, caller, nil, m.sessionRoute(session))
			return
		}
		// A notification: nothing to answer, and on a stateless endpoint
		// nothing it could refer to.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	params, meta, perr := decodeParams(msg.Params)
	modern := m.modernHeader(r) || meta[mcp.MetaKeyProtocolVersion] != nil
	if modern {
		if e, bad := m.validateModern(r, &msg, params, meta, perr); bad {
			reject(e)
			return
		}
	}
	// A legacy (session-era) request, or a 2026-07-28 one that passed.
	if modern && msg.Method == "subscriptions/listen" {
		m.serveListen(w, r, caller, &msg, params, meta)
		return
	}
	if !modern {
		markLegacyTask(r.Header, msg.Method, params)
	}
	if msg.Method == "tools/call" {
		// Arguments the SDK could not decode are a tool-input error, which
		// callTool answers once it knows the tool: set them aside.
		if aerr := catalog.CheckNumbers(params["arguments"]); aerr != nil {
			r = setArgumentsAside(r, &msg, params, aerr)
		}
	}
	if e, bad := checkNumbers(&msg); bad {
		if !modern {
			// As the SDK answers a method's error in the legacy protocol.
			e.status = http.StatusOK
		}
		reject(e)
		return
	}
	switch {
	case modern && directMethod(msg.Method) && m.servesDirect(r):
		m.serveDirect(w, r, caller, &msg, params, meta)
		return
	case modern:
	case session != "":
		m.serveSDK(w, r, caller, msg.ID, m.sessionRoute(session))
		return
	case msg.Method == "initialize":
		if m.sessionStarted(w, msg.ID) {
			m.serveSDK(w, r, caller, msg.ID, m.sessionRoute(""))
		}
		return
	}
	route := sdkRoute{handler: m.jsonHandler, modern: modern}
	switch {
	case prefersSSE(r) || (msg.Method == "tools/call" && meta["progressToken"] != nil):
		// Progress notifications need a stream: JSON mode would drop them.
		route = sdkRoute{handler: m.sseHandler, stream: true, modern: modern}
	case modern && msg.Method == "tools/call" && m.servesDirect(r) && directCall(params):
		route.handler = m.callHandler(msg.ID, params, meta)
	}
	m.serveSDK(w, r, caller, msg.ID, route)
}

// writeUnauthorized answers 401 with the Bearer challenge.
func writeUnauthorized(w http.ResponseWriter, err error) {
	auth.Challenge(w)
	writeRPCError(w, rpcError{status: http.StatusUnauthorized, code: codeInvalidRequest, message: "unauthorized: " + err.Error()})
}

// isResponse reports whether msg, which names no method, is a JSON-RPC
// response: a valid id and a result or an error.
func isResponse(msg *rpcMessage) bool {
	return msg.JSONRPC == "2.0" && validID(msg.ID) && (len(msg.Result) > 0 || len(msg.Error) > 0)
}

// modernHeader reports whether the MCP-Protocol-Version header names a
// per-request protocol (anything but a session-era version).
func (m *Mount) modernHeader(r *http.Request) bool {
	v := r.Header.Get(headerProtocolVersion)
	return v != "" && !legacyVersion(v)
}

// decodeParams splits params into its top-level fields and its _meta.
func decodeParams(raw json.RawMessage) (map[string]json.RawMessage, map[string]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, nil, errors.New("params must be an object")
	}
	var meta map[string]json.RawMessage
	if rawMeta, ok := params["_meta"]; ok {
		if err := json.Unmarshal(rawMeta, &meta); err != nil {
			return params, nil, errors.New("params._meta must be an object")
		}
	}
	return params, meta, nil
}

// validateModern runs the 2026-07-28 checks in the order the wire reference
// fixes: _meta keys, headers against the body, version, method.
func (m *Mount) validateModern(r *http.Request, msg *rpcMessage, params, meta map[string]json.RawMessage, perr error) (rpcError, bool) {
	fail := func(status int, code int64, message string, data any) (rpcError, bool) {
		return rpcError{status: status, id: msg.ID, code: code, message: message, data: data}, true
	}
	// 1. Required _meta keys.
	if perr != nil {
		return fail(http.StatusBadRequest, codeInvalidParams, "invalid params: "+perr.Error(), nil)
	}
	var metaVersion string
	if err := json.Unmarshal(meta[mcp.MetaKeyProtocolVersion], &metaVersion); err != nil || metaVersion == "" {
		return fail(http.StatusBadRequest, codeInvalidParams,
			fmt.Sprintf("missing or invalid _meta field %q", mcp.MetaKeyProtocolVersion), nil)
	}
	// The body parsed, so an object is told by its first byte.
	if caps := bytes.TrimSpace(meta[mcp.MetaKeyClientCapabilities]); len(caps) == 0 || caps[0] != '{' {
		return fail(http.StatusBadRequest, codeInvalidParams,
			fmt.Sprintf("missing or invalid _meta field %q", mcp.MetaKeyClientCapabilities), nil)
	}

	// 2. Headers mirror the body.
	hv := r.Header.Get(headerProtocolVersion)
	if hv == "" {
		return fail(http.StatusBadRequest, codeHeaderMismatch, "missing required MCP-Protocol-Version header", nil)
	}
	if hv != metaVersion {
		return fail(http.StatusBadRequest, codeHeaderMismatch, fmt.Sprintf(
			"header mismatch: MCP-Protocol-Version %q does not match _meta %s %q", hv, mcp.MetaKeyProtocolVersion, metaVersion), nil)
	}
	hm := r.Header.Values(headerMethod)
	if len(hm) == 0 {
		return fail(http.StatusBadRequest, codeHeaderMismatch, "missing required Mcp-Method header", nil)
	}
	if len(hm) > 1 || hm[0] != msg.Method {
		return fail(http.StatusBadRequest, codeHeaderMismatch, fmt.Sprintf(
			"header mismatch: Mcp-Method %q does not match method %q", strings.Join(hm, ","), msg.Method), nil)
	}
	if field, ok := nameField(msg.Method); ok {
		var bodyName string
		hasBody := json.Unmarshal(params[field], &bodyName) == nil && params[field] != nil
		hn := r.Header.Values(headerName)
		switch {
		case len(hn) == 0 && hasBody:
			return fail(http.StatusBadRequest, codeHeaderMismatch, fmt.Sprintf(
				"missing required Mcp-Name header for method %q", msg.Method), nil)
		case len(hn) > 1:
			return fail(http.StatusBadRequest, codeHeaderMismatch, "more than one Mcp-Name header", nil)
		case len(hn) == 1:
			name, ok := decodeHeaderValue(hn[0])
			if !ok {
				return fail(http.StatusBadRequest, codeHeaderMismatch, "Mcp-Name header has invalid base64 encoding", nil)
			}
			if !hasBody || name != bodyName {
				return fail(http.StatusBadRequest, codeHeaderMismatch, fmt.Sprintf(
					"header mismatch: Mcp-Name does not match params.%s", field), nil)
			}
			// The SDK compares Mcp-Name verbatim; give it the decoded value.
			r.Header.Set(headerName, name)
		}
	}

	// 3. Version.
	if metaVersion != ProtocolVersion {
		return fail(http.StatusBadRequest, codeUnsupportedVer, fmt.Sprintf("unsupported protocol version %q", metaVersion),
			map[string]any{"supported": []string{ProtocolVersion}, "requested": metaVersion})
	}

	// 4. Method.
	if !modernMethod(msg.Method) {
		return fail(http.StatusNotFound, codeMethodNotFound, fmt.Sprintf("method not found: %q", msg.Method), nil)
	}
	return rpcError{}, false
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

// sdkRoute is the SDK handler a request goes to and how its response is
// written.
type sdkRoute struct {
	handler http.Handler
	// stream: the response is SSE (keep-alives while a call waits,
	// progress notifications, server requests).
	stream bool
	// session is the Mcp-Session-Id of a request served by the stateful
	// handler ("" for an initialize, which has none yet).
	session string
	// modern: a 2026-07-28 request, whose errors carry HTTP statuses (an
	// admission refusal: 503).
	modern bool
}

// sessionRoute is the route of requests that belong to a session-era
// session (id "" for the initialize that starts one): the stateful
// handler, always SSE.
func (m *Mount) sessionRoute(id string) sdkRoute {
	return sdkRoute{handler: m.sessionHandler, stream: true, session: id}
}

// httpCall is what the MCP handlers need of the HTTP request they serve,
// found by its ownership claim: the handlers of a session do not see the
// request's context (a session keeps the context of its initialize).
type httpCall struct {
	// stream is the request's SSE writer, nil for a JSON response.
	stream *sseWriter
	// argumentsProblem is the tool-input error found in tools/call
	// arguments before the SDK decoded them (see setArgumentsAside).
	argumentsProblem error
	// overload learns of a tools/call refused by admission control, which
	// the response then answers with 503 and Retry-After (nil for a
	// batch).
	overload *overloadNote
}

// serveSDK hands a checked request to an SDK handler with the caller in
// its context, under the request-ownership tracker: the run the call starts
// or continues is cancelled unless its whole response is delivered. id is
// the request's id (nil for a batch, a notification or a response): a
// transport error the SDK answers in plain text is rewritten as a JSON-RPC
// error carrying it, and so is a tools/call refused by admission control
// (status 503 and Retry-After for a modern request; see
// Options.Admission). While the request is served, its httpCall is
// registered under its claim's key, and a session's request is recorded
// with its session, whose end settles it.
func (m *Mount) serveSDK(w http.ResponseWriter, r *http.Request, caller signals.Subject, id json.RawMessage, route sdkRoute) {
	pw := &plainErrorWriter{ResponseWriter: w, id: id, modern: route.modern}
	defer pw.finish()
	r = r.WithContext(auth.WithSubject(r.Context(), caller))
	call := &httpCall{argumentsProblem: argumentsProblem(r.Context())}
	if id != nil {
		call.overload = &overloadNote{}
		pw.overload = call.overload
	}
	var out http.ResponseWriter = pw
	if route.stream {
		call.stream = &sseWriter{ResponseWriter: pw}
		out = call.stream
		defer call.stream.stop()
		if m.metrics != nil {
			m.metrics.SSEStream(1)
			defer m.metrics.SSEStream(-1)
		}
	}
	m.tracker.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(ownership.ClaimHeader)
		m.calls.Store(key, call)
		defer m.calls.Delete(key)
		if route.session != "" {
			defer m.sessions.enter(route.session, m.tracker.Lookup(r.Header))()
		}
		route.handler.ServeHTTP(w, r)
	})).ServeHTTP(out, r)
}

// httpCall returns the HTTP request that holds claim, or nil (stdio, or
// no claim).
func (m *Mount) httpCall(claim *ownership.Claim) *httpCall {
	if claim == nil {
		return nil
	}
	v, _ := m.calls.Load(claim.Key())
	c, _ := v.(*httpCall)
	return c
}

// prefersSSE reports whether the client lists text/event-stream before
// application/json in Accept.
func prefersSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch mt {
			case "text/event-stream":
				return true
			case "application/json":
				return false
			}
		}
	}
	return false
}
