package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
)

// The session dialect (2025-06-18, 2025-11-25 and before): the go-sdk serves
// it, over the same endpoint, in HTTP sessions (the stateful handler, so
// that a blocking call can ask the run's questions with elicitation/create;
// http.go) or without one (its stateless handler), and over stdio
// (stdio.go). This file routes checked session-dialect requests to the SDK
// and decodes its requests into the core's terms (middleware); the
// 2025-11-25 task methods are in tasks_2025_11_25.go.

// Serve hands a checked session-dialect request to the SDK.
func (d *Dialect) Serve(w http.ResponseWriter, r *http.Request, in *wire.Incoming) {
	if e, bad := sdkMethodUnknown(in.Msg.Method, in.Msg.ID); bad {
		d.Observer.Refuse(w, in, e)
		return
	}
	switch {
	case in.Session != "":
		d.serveSDK(w, r, in, d.sessionRoute(in.Session))
	case in.Msg.Method == methods.Initialize:
		if d.sessionStarted(w, in.Msg.ID) {
			d.serveSDK(w, r, in, d.sessionRoute(""))
		}
	case in.Accept.PrefersSSE || (in.Msg.Method == methods.ToolsCall && in.Meta["progressToken"] != nil):
		// Progress notifications need a stream: JSON mode would drop them.
		d.serveSDK(w, r, in, sdkRoute{handler: d.sseHandler, stream: true})
	default:
		d.serveSDK(w, r, in, sdkRoute{handler: d.jsonHandler})
	}
}

// ServeBatch serves a session-dialect JSON-RPC batch (2026-07-28 has none): the
// mount checks its elements, the SDK answers them.
func (d *Dialect) ServeBatch(w http.ResponseWriter, r *http.Request, in *wire.Incoming, body []byte) {
	if wire.ModernHeader(r) {
		d.Observer.Refuse(w, in, wire.Refusal{Status: http.StatusBadRequest, Code: wire.CodeInvalidRequest,
			Message: "JSON-RPC batches are not supported in protocol " + wire.ProtocolVersion})
		return
	}
	if e, bad := CheckBatch(body); bad {
		d.Observer.Refuse(w, in, e)
		return
	}
	if in.Session == "" {
		d.serveSDK(w, r, in, sdkRoute{handler: d.jsonHandler})
		return
	}
	if d.CheckSession(w, in.Session, core.Principal(in.Caller), nil) {
		d.serveSDK(w, r, in, d.sessionRoute(in.Session))
	}
}

// sdkMethodUnknown refuses, before the SDK sees it, a session-dialect message
// whose method the SDK does not take: -32601 with status 200, as a
// method's error is answered in that protocol.
func sdkMethodUnknown(method string, id json.RawMessage) (wire.Refusal, bool) {
	if _, ok := table[method]; ok {
		return wire.Refusal{}, false
	}
	return wire.Refusal{Status: http.StatusOK, ID: id, Code: wire.CodeMethodNotFound,
		Message: fmt.Sprintf("JSON RPC not handled: %q unsupported", method)}, true
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
}

// sessionRoute is the route of requests that belong to a session-dialect
// session (id "" for the initialize that starts one): the stateful
// handler, always SSE.
func (d *Dialect) sessionRoute(id string) sdkRoute {
	return sdkRoute{handler: d.sessionHandler, stream: true, session: id}
}

// requestSide is the session dialect's record of a request: its ownership
// claim, what its transport adapter (HTTP or stdio) read of it before the
// SDK decoded it, and what its transport offers the core. A session's
// handlers see neither the HTTP request nor its context (a session keeps
// the context of its initialize): they find the record by the request's
// claimHeader (requests.of).
type requestSide struct {
	// claim is the request's ownership claim.
	claim *ownership.Claim
	// stream is the request's SSE stream, nil for a JSON response or stdio.
	stream *wire.EventStream
	// argumentsProblem is the tool-input error found in tools/call
	// arguments before the SDK decoded them (see argumentsSetAside).
	argumentsProblem error
	// overload learns of a tools/call refused by admission control, whose
	// response then carries a Retry-After header (status 200, as every
	// session-dialect error is answered; nil for a batch and on stdio): the
	// go-sdk writes the answer, and only the writer under it can add the
	// header.
	overload *overloadNote
	// taskField: the request carried the 2025-11-25 task field,
	// which the SDK's params types drop (taskRequested).
	taskField bool
}

// KeepAlive starts the SSE keep-alives of the request's stream, if it has
// one (core.Response).
func (c *requestSide) KeepAlive(interval time.Duration) (stop func()) {
	if c == nil || c.stream == nil {
		return func() {}
	}
	c.stream.KeepAlive(interval)
	return c.stream.Stop
}

// sdkError is err as the go-sdk answers it: a *core.Overloaded becomes
// its JSON-RPC form (the go-sdk keeps the code and data of a bare
// *jsonrpc.Error only), and the refusal is noted for plainErrorWriter,
// which writes the answer with a Retry-After header.
func (c *requestSide) sdkError(err error) error {
	over := (*core.Overloaded)(nil)
	if !errors.As(err, &over) {
		return err
	}
	if c != nil {
		c.overload.set(over.Rejection)
	}
	return over.Unwrap()
}

// overloadNote carries a refusal by admission control from the go-sdk's
// handler of a tools/call to the writer of its response.
type overloadNote struct {
	mu  sync.Mutex
	rej *admission.Rejection
}

// set records the refusal; a nil note records nothing.
func (n *overloadNote) set(rej *admission.Rejection) {
	if n == nil {
		return
	}
	n.mu.Lock()
	n.rej = rej
	n.mu.Unlock()
}

// get returns the refusal recorded, nil when none (or n is nil).
func (n *overloadNote) get() *admission.Rejection {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rej
}

// serveSDK hands a checked request to an SDK handler with the caller in
// its context, under the request-ownership tracker: the run the call starts
// or continues is cancelled unless its whole response is delivered. A
// transport error the SDK answers in plain text is written as a JSON-RPC
// error carrying it, and so is a tools/call refused by admission control.
// The request's record (requestSide, with its claim) is found by its
// claimHeader, and a session's request is recorded with its session, whose
// end settles it.
func (d *Dialect) serveSDK(w http.ResponseWriter, r *http.Request, in *wire.Incoming, route sdkRoute) {
	id := in.Msg.ID
	pw := &plainErrorWriter{ResponseWriter: w, id: id}
	defer pw.finish()
	body := in.Body
	if in.ArgumentsProblem != nil {
		body = argumentsSetAside(&in.Msg, in.Params)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r = r.WithContext(auth.WithSubject(r.Context(), in.Caller))
	side := &requestSide{argumentsProblem: in.ArgumentsProblem, taskField: len(id) > 0 && taskRequested(in.Msg.Method, in.Params)}
	if id != nil {
		side.overload = &overloadNote{}
		pw.overload = side.overload
	}
	var out http.ResponseWriter = pw
	if route.stream {
		side.stream = wire.NewEventStream(pw)
		out = side.stream
		defer side.stream.Stop()
		defer d.Observer.Stream()()
	}
	d.tracker.HTTP(func(w http.ResponseWriter, r *http.Request, claim *ownership.Claim) {
		side.claim = claim
		r.Header.Set(claimHeader, d.requests.add(side))
		if route.session != "" {
			defer d.sessions.enter(route.session, claim)()
		}
		route.handler.ServeHTTP(w, r)
	}).ServeHTTP(out, r)
}

// argumentsSetAside is the body of a tools/call whose arguments the SDK
// could not decode, with {} for them (decode set params["arguments"]).
func argumentsSetAside(msg *wire.Message, params map[string]json.RawMessage) []byte {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil // not reached: params came from JSON
	}
	out := *msg
	out.Params = raw
	body, _ := json.Marshal(out)
	return body
}

// middleware is the SDK server's dispatch of the mount's methods: the
// table's serve of the method, or else the SDK's own handler. It decodes
// tools/call into the core's call request, answers tools/list from the
// catalog, serves the 2025-11-25 dialect's tasks/* methods to session-dialect
// requests, and rewrites initialize results.
func (d *Dialect) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		side := d.requests.of(req)
		// The SDK writes what this returns: the request's answer.
		defer side.requestClaim().Answering()
		if serve := table[method].serve; serve != nil {
			return serve(d, ctx, method, req, side, next)
		}
		return next(ctx, method, req)
	}
}

// callTool serves a session-dialect tools/call: the core runs the call, and
// the answer is encoded in the 2025-11-25 shapes.
func (d *Dialect) callTool(ctx context.Context, _ string, req mcp.Request, side *requestSide, _ mcp.MethodHandler) (mcp.Result, error) {
	r, ok := req.(*mcp.CallToolRequest)
	if !ok || r.Params == nil {
		return nil, core.InvalidParams("tools/call requires params")
	}
	defer d.tracker.Track()()
	call := d.sessionCall(r, side)
	key, err := idempotencyKey(r.Params.Meta)
	if err != nil {
		return nil, err
	}
	call.IdempotencyKey = key
	res, err := d.Core.CallTool(ctx, call)
	res, err = d.tasks.answerCall(call, res, err)
	return res, side.sdkError(err)
}

// readResource serves a session-dialect resources/read.
func (d *Dialect) readResource(ctx context.Context, _ string, req mcp.Request, _ *requestSide, _ mcp.MethodHandler) (mcp.Result, error) {
	r, ok := req.(*mcp.ReadResourceRequest)
	if !ok || r.Params == nil || r.Params.URI == "" {
		return nil, core.InvalidParams("resources/read requires params.uri, a string")
	}
	res, err := d.Results.Read(ctx, r.Params.URI)
	return wire.ReadResource(res, err, false)
}

// initialize serves an initialize with the SDK's handler and rewrites its
// result: no Tasks extension (it is undefined before 2026-07-28), and the
// dialect's tasks capability for 2025-11-25.
func (d *Dialect) initialize(ctx context.Context, method string, req mcp.Request, side *requestSide, next mcp.MethodHandler) (mcp.Result, error) {
	res, err := next(ctx, method, req)
	if err != nil {
		return res, err
	}
	d.trackSession(ctx, req)
	d.noteDeclaredTasks(req, side)
	if ir, ok := res.(*mcp.InitializeResult); ok && ir.Capabilities != nil {
		return sessionInitializeResult(ir)
	}
	return res, nil
}

// sessionCall decodes a session-dialect tools/call the SDK decoded, whose
// record is side, into a call request (2026-07-28 requests never come here:
// over HTTP and stdio alike they go to their own dialect). A request that
// declared the Tasks extension accepts a task; one with params.task wants
// one, and in 2025-11-25 a tool that runs only as a task must be called with
// params.task.
func (d *Dialect) sessionCall(r *mcp.CallToolRequest, side *requestSide) *core.CallRequest {
	p := r.Params
	call := &core.CallRequest{Name: p.Name, Arguments: p.Arguments, Caps: core.CapsFromMeta(p.Meta),
		RequestState: p.RequestState, InputResponses: p.InputResponses, ProgressToken: p.GetProgressToken()}
	if call.Caps.Tasks() {
		call.Task = core.TaskAccepted
	}
	if side != nil {
		call.Claim = side.claim
		call.Response = side
		call.ArgumentsProblem = side.argumentsProblem
		if side.taskField {
			call.Task = core.TaskWanted
		}
	}
	if r.Session != nil {
		call.FollowsTasks = d.sessions.declaredTasks(r.Session)
		call.Notify = r.Session
		if sessionElicits(r.Session) {
			call.Asker = sessionAsker{r.Session}
		}
	}
	call.MustAskForTask = r.ProtocolVersion() == dialectVersion
	return call
}

// idempotencyKey reads the idempotency key of a tools/call the SDK
// decoded (core.IdempotencyKeyOf).
func idempotencyKey(meta map[string]any) (string, error) {
	v, ok := meta[core.MetaIdempotencyKey]
	if !ok {
		return "", nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", core.InvalidParams(fmt.Sprintf("_meta[%q] does not encode: %v", core.MetaIdempotencyKey, err))
	}
	return core.IdempotencyKeyOf(raw)
}

// sessionListing is how a tools/list the SDK decoded is answered. A
// client whose session did not declare the 2025-11-25 tasks capability,
// and whose request no Tasks extension, gets the companion tools too.
func (d *Dialect) sessionListing(req mcp.Request) wire.Listing {
	var meta map[string]any
	if p, ok := req.GetParams().(*mcp.ListToolsParams); ok && p != nil {
		meta = p.Meta
	}
	var l wire.Listing
	r, ok := req.(*mcp.ListToolsRequest)
	if ok {
		l.Execution = r.ProtocolVersion() == dialectVersion
	}
	follows := ok && d.sessions.declaredTasks(r.Session)
	l.Companions = !follows && !core.CapsFromMeta(meta).FollowsRuns()
	return l
}

// sessionInitializeResult rewrites an initialize result: the Tasks
// extension is removed, and for 2025-11-25 the dialect's capabilities.tasks
// is added (the SDK's capabilities type has no field for it).
func sessionInitializeResult(ir *mcp.InitializeResult) (mcp.Result, error) {
	caps := *ir.Capabilities
	caps.Extensions = nil
	ir.Capabilities = &caps
	if ir.ProtocolVersion != dialectVersion {
		return ir, nil
	}
	b, err := json.Marshal(ir)
	if err != nil {
		return nil, fmt.Errorf("encode the initialize result: %w", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("decode the initialize result: %w", err)
	}
	capsObj, _ := fields["capabilities"].(map[string]any)
	if capsObj == nil {
		capsObj = map[string]any{}
		fields["capabilities"] = capsObj
	}
	capsObj["tasks"] = dialectCapability()
	return &rawResult{fields: fields}, nil
}

// plainErrorWriter writes the SDK's plain-text transport errors (an
// http.Error: status >= 400, Content-Type text/plain) as JSON-RPC errors
// with the same status and message, so that no refusal on /mcp comes back
// as text; the code follows from the status (404: -32601, 5xx: -32603,
// others -32600). Everything else passes through untouched.
type plainErrorWriter struct {
	http.ResponseWriter
	id json.RawMessage
	// overload, when set, learns of a call refused by admission control,
	// whose answer the writer replaces: status 200 (as a session-dialect
	// request's error is answered) with a Retry-After header.
	overload *overloadNote

	started bool // headers passed through
	status  int  // the intercepted status; 0 when passing through
	buf     bytes.Buffer
}

func (w *plainErrorWriter) WriteHeader(code int) {
	if !w.started && w.status == 0 && (w.overload.get() != nil || code >= 400 &&
		strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain")) {
		w.status = code
		return
	}
	if w.status != 0 {
		return
	}
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *plainErrorWriter) Write(p []byte) (int, error) {
	if !w.started && w.status == 0 && w.overload.get() != nil {
		w.status = http.StatusOK // an implicit WriteHeader
	}
	if w.status != 0 {
		return w.buf.Write(p)
	}
	w.started = true
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher; an intercepted error is written by finish.
func (w *plainErrorWriter) Flush() {
	if w.status == 0 {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *plainErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the intercepted error, if any, as a JSON-RPC error.
func (w *plainErrorWriter) finish() {
	if w.status == 0 {
		return
	}
	w.Header().Del("X-Content-Type-Options")
	if rej := w.overload.get(); rej != nil {
		wire.WriteOverloaded(w.ResponseWriter, w.id, rej, http.StatusOK)
		return
	}
	code := int64(wire.CodeInvalidRequest)
	switch {
	case w.status == http.StatusNotFound:
		code = wire.CodeMethodNotFound
	case w.status >= 500:
		code = wire.CodeInternalError
	}
	wire.WriteRefusal(w.ResponseWriter, wire.Refusal{Status: w.status, ID: w.id, Code: code, Message: strings.TrimSpace(w.buf.String())})
}

// CheckBatch checks a session-dialect JSON-RPC batch before the SDK sees it:
// not empty, every element an object with a valid id (when present) and no
// number a 64-bit float cannot represent; then, as the SDK reads a batch,
// every element a JSON-RPC message (-32700 otherwise) and every request's
// method one the SDK takes.
func CheckBatch(body []byte) (wire.Refusal, bool) {
	var elems []json.RawMessage
	if err := json.Unmarshal(body, &elems); err != nil {
		return wire.Refusal{Status: http.StatusBadRequest, Code: wire.CodeParseError, Message: "parse error: " + err.Error()}, true
	}
	if len(elems) == 0 {
		return wire.Refusal{Status: http.StatusBadRequest, Code: wire.CodeInvalidRequest,
			Message: "invalid request: an empty JSON-RPC batch"}, true
	}
	for i, el := range elems {
		if e, bad := checkBatchElement(i, el); bad {
			return e, true
		}
	}
	decoded := make([]jsonrpc.Message, 0, len(elems))
	for _, el := range elems {
		msg, err := jsonrpc.DecodeMessage(el)
		if err != nil {
			return wire.Refusal{Status: http.StatusBadRequest, Code: wire.CodeParseError, Message: "malformed payload: " + err.Error()}, true
		}
		decoded = append(decoded, msg)
	}
	for _, msg := range decoded {
		if req, ok := msg.(*jsonrpc.Request); ok {
			if e, bad := sdkMethodUnknown(req.Method, nil); bad {
				return e, true
			}
		}
	}
	return wire.Refusal{}, false
}

// checkBatchElement checks element i of a batch.
func checkBatchElement(i int, el json.RawMessage) (wire.Refusal, bool) {
	var msg wire.Message
	if err := json.Unmarshal(el, &msg); err != nil {
		return wire.Refusal{Status: http.StatusBadRequest, Code: wire.CodeInvalidRequest,
			Message: fmt.Sprintf("invalid request: batch element %d is not a JSON-RPC message: %v", i, err)}, true
	}
	if len(msg.ID) > 0 && !wire.ValidID(msg.ID) {
		e := wire.ErrInvalidID(msg.ID)
		e.Message = fmt.Sprintf("batch element %d: %s", i, e.Message)
		return e, true
	}
	if err := catalog.CheckNumbers(msg.Params); err != nil {
		return wire.Refusal{Status: http.StatusBadRequest, Code: wire.CodeInvalidParams,
			Message: fmt.Sprintf("invalid params of batch element %d: %s", i, wire.ParamsPath(err))}, true
	}
	return wire.Refusal{}, false
}

// observe wraps the method handlers with the request's span and its
// metrics. With neither a tracer nor a recorder it adds nothing.
func (d *Dialect) observe(next mcp.MethodHandler) mcp.MethodHandler {
	if d.Observer.Tracer == nil && d.Observer.Metrics == nil {
		return next
	}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, methods.NotificationPrefix) {
			return next(ctx, method, req) // not a request: nothing answers it
		}
		var header map[string][]string
		if extra := req.GetExtra(); extra != nil {
			header = extra.Header
		}
		tool := ""
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
			tool = p.Name
		}
		return d.Observer.Observed(ctx, method, requestMeta(req), header, tool, func(ctx context.Context) (mcp.Result, error) {
			return next(ctx, method, req)
		})
	}
}

// requestMeta is the request's params._meta (nil when it has no params).
func requestMeta(req mcp.Request) map[string]any {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p.GetMeta()
}

// ServeNotification answers a notification: 202, unless it belongs to an
// HTTP session, whose SDK handler takes it (notifications/
// initialized, notifications/cancelled, ...).
func (d *Dialect) ServeNotification(w http.ResponseWriter, r *http.Request, in *wire.Incoming) {
	if in.Session == "" {
		// Nothing to answer, and on a stateless endpoint nothing it could
		// refer to.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if e, bad := sdkMethodUnknown(in.Msg.Method, nil); bad {
		d.Observer.Refuse(w, in, e)
		return
	}
	d.serveSDK(w, r, in, d.sessionRoute(in.Session))
}

// newServer builds the go-sdk server of the session dialect and its
// HTTP handlers.
func (d *Dialect) newServer(opts Options) error {
	server := mcp.NewServer(opts.Implementation, &mcp.ServerOptions{
		Instructions: opts.Instructions,
		Capabilities: opts.Capabilities,
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs = int(d.CacheTTLMs)
			c.CacheScope = "public"
		},
	})
	server.AddReceivingMiddleware(d.observe, d.middleware)
	if err := d.tasks.registerMethods(server); err != nil {
		return err
	}
	d.server = server
	getServer := func(*http.Request) *mcp.Server { return server }
	// ServeHTTP does the Host check (DNS-rebinding protection) itself, with
	// AllowedHosts for local reverse proxies; the SDK's fixed one is off.
	d.jsonHandler = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, PropagateRequestCancellation: true, MaxRequestBodyBytes: d.maxBody,
		DisableLocalhostProtection: true,
	})
	d.sseHandler = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: false, PropagateRequestCancellation: true, MaxRequestBodyBytes: d.maxBody,
		DisableLocalhostProtection: true,
	})
	// Session-dialect sessions: server requests (elicitation) need a session
	// to answer on; responses are SSE so that they ride the call's stream.
	d.sessionHandler = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		JSONResponse: false, SessionTimeout: opts.SessionIdleTimeout, MaxRequestBodyBytes: d.maxBody,
		DisableLocalhostProtection: true,
	})
	return nil
}
