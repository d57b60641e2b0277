package mcpmount

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/httpgate"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/signals"
)

// incoming is one POST request as ServeHTTP decoded it, once, for the
// dialect that serves it.
type incoming struct {
	start  time.Time
	header http.Header // the request's HTTP headers
	caller signals.Subject
	body   []byte
	msg    rpcMessage
	// params and meta are the top-level fields of params and of its _meta.
	params, meta map[string]json.RawMessage
	// session is the Mcp-Session-Id of a session-era request ("": none).
	session string
	// modern: a 2026-07-28 request (its header or _meta names the
	// per-request protocol).
	modern bool
	accept negotiation
	// argumentsProblem is a number in tools/call arguments that a 64-bit
	// float cannot hold: a tool-input error, answered once the tool is
	// known.
	argumentsProblem error
}

// refuse writes a refusal of the request and records it.
func (m *Mount) refuse(w http.ResponseWriter, in *incoming, e rpcError) {
	writeRPCError(w, e)
	if m.metrics != nil {
		m.metrics.Request(methodLabel(in.msg.Method), OutcomeRejected, time.Since(in.start))
	}
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
// callTool answers once it knows the tool), then for a tools/call the
// tool's scopes (403 insufficient_scope with the Bearer challenge, as a
// token without the required scopes gets; permitCall). Method-specific
// checks (the Tasks extension gate, then the task lookup) happen in the
// method handlers.
//
// One route per dialect: the mount's own handlers answer every 2026-07-28
// request (dialect_2026.go); the go-sdk serves the session era
// (dialect_session.go), in HTTP sessions when a request belongs to one (an
// Mcp-Session-Id header, or an initialize, which starts one) and without
// one otherwise, as before sessions existed.
//
// Every refusal is a JSON-RPC error with a JSON body, and so is a
// tools/call refused by admission control (Options.Admission): status 503
// with Retry-After.
func (m *Mount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in := &incoming{start: time.Now(), header: r.Header}
	if !m.intake(w, r, in) || !m.decode(w, r, in) || !m.permitCall(w, r, in) {
		return
	}
	if in.modern {
		m.serve2026(w, r, in)
		return
	}
	m.serveSessionEra(w, r, in)
}

// intake runs the checks of a request up to its body, which it reads. It
// answers (and returns false) a request that does not pass, and a session
// stream's GET or DELETE.
func (m *Mount) intake(w http.ResponseWriter, r *http.Request, in *incoming) bool {
	if rej := m.gate.CheckHostOrigin(r); rej != nil {
		m.refuse(w, in, rpcError{status: rej.Status, code: codeInvalidRequest, message: rej.Message})
		return false
	}
	in.session = m.legacySession(r)
	if r.Method != http.MethodPost {
		if in.session != "" && (r.Method == http.MethodGet || r.Method == http.MethodDelete) {
			m.serveSessionStream(w, r, in.session)
			return false
		}
		w.Header().Set("Allow", http.MethodPost)
		m.refuse(w, in, rpcError{status: http.StatusMethodNotAllowed, code: codeInvalidRequest,
			message: fmt.Sprintf("method %s not allowed: the MCP endpoint takes POST (GET and DELETE only with the %s of a session-era session)",
				r.Method, headerSessionID)})
		return false
	}
	caller, err := m.authenticate(r)
	if err != nil {
		auth.Challenge(w, err)
		m.refuse(w, in, unauthorized(err))
		return false
	}
	in.caller = caller
	if !httpgate.JSONContentType(r) {
		m.refuse(w, in, rpcError{status: http.StatusUnsupportedMediaType, code: codeInvalidRequest,
			message: httpgate.UnsupportedMediaType(r).Message})
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			m.refuse(w, in, rpcError{status: http.StatusRequestEntityTooLarge, code: codeInvalidRequest,
				message: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)})
		case httpgate.IsTimeout(err):
			m.refuse(w, in, rpcError{status: http.StatusRequestTimeout, code: codeInvalidRequest,
				message: "the request body did not arrive in time"})
		default:
			m.refuse(w, in, rpcError{status: http.StatusBadRequest, code: codeInvalidRequest,
				message: "failed to read the request body: " + err.Error()})
		}
		return false
	}
	in.body = body
	r.Header.Del(legacyTaskHeader)
	return true
}

// decode decodes the body, once, and checks the message: nesting, batch,
// envelope, session, notification, then the 2026-07-28 checks
// (validateModern) and numbers. It answers (and returns false) a request
// that does not pass, and batches, responses and notifications, which
// have nothing more to check.
func (m *Mount) decode(w http.ResponseWriter, r *http.Request, in *incoming) bool {
	if depth := nestingDepth(in.body); depth > maxNesting {
		m.refuse(w, in, rpcError{status: http.StatusBadRequest, code: codeParseError,
			message: fmt.Sprintf("parse error: the message nests %d levels deep; at most %d are accepted", depth, maxNesting)})
		return false
	}
	if trimmed := bytes.TrimSpace(in.body); len(trimmed) > 0 && trimmed[0] == '[' {
		m.serveBatch(w, r, in, trimmed)
		return false
	}
	if err := json.Unmarshal(in.body, &in.msg); err != nil {
		m.refuse(w, in, rpcError{status: http.StatusBadRequest, code: codeParseError, message: "parse error: " + err.Error()})
		return false
	}
	msg := &in.msg
	if in.session != "" && msg.Method == "" && isResponse(msg) {
		// A session-era client answering a request of the server (an
		// elicitation): the SDK matches it to the waiting request.
		if m.checkSession(w, in.session, core.Principal(in.caller), nil) {
			m.serveSDK(w, r, in, m.sessionRoute(in.session))
		}
		return false
	}
	if e, bad := checkEnvelope(msg); bad {
		m.refuse(w, in, e)
		return false
	}
	if in.session != "" && !m.checkSession(w, in.session, core.Principal(in.caller), msg.ID) {
		return false
	}
	if len(msg.ID) == 0 {
		m.serveNotification(w, r, in)
		return false
	}
	var perr error
	in.params, in.meta, perr = decodeParams(msg.Params)
	in.modern = m.modernHeader(r) || in.meta[mcp.MetaKeyProtocolVersion] != nil
	in.accept = negotiate(r)
	if in.modern {
		if e, bad := m.validateModern(r, msg, in.params, in.meta, perr); bad {
			m.refuse(w, in, e)
			return false
		}
	}
	if msg.Method == "tools/call" {
		// Arguments that cannot be decoded are a tool-input error, which
		// callTool answers once it knows the tool: set them aside.
		if aerr := catalog.CheckNumbers(in.params["arguments"]); aerr != nil {
			in.argumentsProblem = aerr
			in.params["arguments"] = json.RawMessage("{}")
		}
	}
	if e, bad := checkNumbers(msg, in); bad {
		if !in.modern {
			// As the SDK answers a method's error in the legacy protocol.
			e.status = http.StatusOK
		}
		m.refuse(w, in, e)
		return false
	}
	return true
}

// serveNotification answers a notification: 202, unless it belongs to a
// session-era session, whose SDK handler takes it (notifications/
// initialized, notifications/cancelled, ...).
func (m *Mount) serveNotification(w http.ResponseWriter, r *http.Request, in *incoming) {
	if in.session == "" {
		// Nothing to answer, and on a stateless endpoint nothing it could
		// refer to.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if e, bad := m.sdkMethodUnknown(in.msg.Method, nil); bad {
		m.refuse(w, in, e)
		return
	}
	m.serveSDK(w, r, in, m.sessionRoute(in.session))
}

// writeUnauthorized answers a request whose credential was refused: 401
// (403 for a token without the required scopes) with the Bearer
// challenge.
func writeUnauthorized(w http.ResponseWriter, err error) {
	auth.Challenge(w, err)
	writeRPCError(w, unauthorized(err))
}

// unauthorized is the JSON-RPC error of a refused credential.
func unauthorized(err error) rpcError {
	status := auth.Status(err)
	prefix := "unauthorized: "
	if status == http.StatusForbidden {
		prefix = "forbidden: "
	}
	return rpcError{status: status, code: codeInvalidRequest, message: prefix + err.Error()}
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
	if err := decodeValid(raw, &params); err != nil {
		return nil, nil, errors.New("params must be an object")
	}
	var meta map[string]json.RawMessage
	if rawMeta, ok := params["_meta"]; ok {
		if err := decodeValid(rawMeta, &meta); err != nil {
			return params, nil, errors.New("params._meta must be an object")
		}
	}
	return params, meta, nil
}

// decodeValid is json.Unmarshal for raw, a part of a message that
// json.Unmarshal already found valid JSON: it decodes without checking
// that again.
func decodeValid(raw json.RawMessage, v any) error {
	return json.NewDecoder(bytes.NewReader(raw)).Decode(v)
}
