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
	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/mcpmount/internal/modern"
	"github.com/openwop/temporal-mcp/mcpmount/internal/session"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
)

// ServeHTTP serves one MCP request. Checks run in this order: Host and
// Origin (403, internal/httpgate's gate shared with the REST API), method
// (405; GET and DELETE only in an HTTP session of the session dialect),
// credential (401), content type (415), body (413, 408, -32700 for a body
// that is not JSON or nests deeper than wire.MaxNesting, -32600 for a
// message that is not a JSON-RPC request: an id that is not a string or an
// integer, an empty batch), the session of a session-dialect request that
// names one (404 unless it is live and the caller's), notifications (202),
// then for 2026-07-28 requests the _meta keys (-32602), the headers against
// the body (-32020), the version (-32022) and the method (-32601, 404), and
// for every request a number too large for a 64-bit float (-32602; in
// tools/call arguments it is set aside for the tool-input error, a
// CallToolResult with isError, that the core's CallTool answers once it
// knows the tool), then for a tools/call the tool's scopes (403
// insufficient_scope with the Bearer challenge, as a token without the
// required scopes gets; permitCall). Method-specific checks (the Tasks
// extension gate, then the task lookup) happen in the method handlers.
//
// One route per dialect: the mount's own handlers answer every 2026-07-28
// request (internal/modern); the go-sdk serves the session dialect
// (internal/session), in HTTP sessions when a request belongs to one (an
// Mcp-Session-Id header, or an initialize, which starts one) and without
// one otherwise, as before sessions existed.
//
// Every refusal is a JSON-RPC error with a JSON body, and so is a
// tools/call refused by admission control (Options.Admission): status 503
// with Retry-After.
func (m *Mount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in := &wire.Incoming{Start: time.Now(), Header: r.Header}
	if !m.intake(w, r, in) || !m.decode(w, r, in) || !m.permitCall(w, r, in) {
		return
	}
	if in.Modern {
		m.modern.Serve(w, r, in)
		return
	}
	m.session.Serve(w, r, in)
}

// intake runs the checks of a request up to its body, which it reads. It
// answers (and returns false) a request that does not pass, and a session
// stream's GET or DELETE.
func (m *Mount) intake(w http.ResponseWriter, r *http.Request, in *wire.Incoming) bool {
	if rej := (*httpgate.Rejection)(nil); errors.As(m.gate.CheckHostOrigin(r), &rej) {
		m.obs.Refuse(w, in, wire.Refusal{Status: rej.Status, Code: wire.CodeInvalidRequest, Message: rej.Message})
		return false
	}
	in.Session = m.session.SessionOf(r)
	if r.Method != http.MethodPost {
		if in.Session != "" && (r.Method == http.MethodGet || r.Method == http.MethodDelete) {
			m.session.ServeStream(w, r, in.Session)
			return false
		}
		w.Header().Set("Allow", http.MethodPost)
		m.obs.Refuse(w, in, wire.Refusal{Status: http.StatusMethodNotAllowed, Code: wire.CodeInvalidRequest,
			Message: fmt.Sprintf("method %s not allowed: the MCP endpoint takes POST (GET and DELETE only with the %s of a session-era session)",
				r.Method, session.HeaderSessionID)})
		return false
	}
	caller, err := m.authenticate(r)
	if err != nil {
		auth.Challenge(w, err)
		m.obs.Refuse(w, in, wire.Unauthorized(err))
		return false
	}
	in.Caller = caller
	if !httpgate.JSONContentType(r) {
		m.obs.Refuse(w, in, wire.Refusal{Status: http.StatusUnsupportedMediaType, Code: wire.CodeInvalidRequest,
			Message: httpgate.UnsupportedMediaType(r).Message})
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			m.obs.Refuse(w, in, wire.Refusal{Status: http.StatusRequestEntityTooLarge, Code: wire.CodeInvalidRequest,
				Message: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)})
		case httpgate.IsTimeout(err):
			m.obs.Refuse(w, in, wire.Refusal{Status: http.StatusRequestTimeout, Code: wire.CodeInvalidRequest,
				Message: "the request body did not arrive in time"})
		default:
			m.obs.Refuse(w, in, wire.Refusal{Status: http.StatusBadRequest, Code: wire.CodeInvalidRequest,
				Message: "failed to read the request body: " + err.Error()})
		}
		return false
	}
	in.Body = body
	return true
}

// decode decodes the body, once, and checks the message: nesting, batch,
// envelope, session, notification, then the 2026-07-28 checks
// (modern.Validate) and numbers. It answers (and returns false) a request
// that does not pass, and batches, responses and notifications, which
// have nothing more to check.
func (m *Mount) decode(w http.ResponseWriter, r *http.Request, in *wire.Incoming) bool {
	if depth := wire.NestingDepth(in.Body); depth > wire.MaxNesting {
		m.obs.Refuse(w, in, wire.Refusal{Status: http.StatusBadRequest, Code: wire.CodeParseError,
			Message: fmt.Sprintf("parse error: the message nests %d levels deep; at most %d are accepted", depth, wire.MaxNesting)})
		return false
	}
	if trimmed := bytes.TrimSpace(in.Body); len(trimmed) > 0 && trimmed[0] == '[' {
		m.session.ServeBatch(w, r, in, trimmed)
		return false
	}
	if err := json.Unmarshal(in.Body, &in.Msg); err != nil {
		m.obs.Refuse(w, in, wire.Refusal{Status: http.StatusBadRequest, Code: wire.CodeParseError, Message: "parse error: " + err.Error()})
		return false
	}
	msg := &in.Msg
	if in.Session != "" && msg.Method == "" && wire.IsResponse(msg) {
		// A session-dialect client answering a request of the server (an
		// elicitation): the SDK matches it to the waiting request.
		m.session.ServeResponse(w, r, in)
		return false
	}
	if e, bad := wire.CheckEnvelope(msg); bad {
		m.obs.Refuse(w, in, e)
		return false
	}
	if in.Session != "" && !m.session.CheckSession(w, in.Session, core.Principal(in.Caller), msg.ID) {
		return false
	}
	if len(msg.ID) == 0 {
		m.session.ServeNotification(w, r, in)
		return false
	}
	var perr error
	in.Params, in.Meta, perr = wire.DecodeParams(msg.Params)
	in.Modern = wire.ModernHeader(r) || in.Meta[mcp.MetaKeyProtocolVersion] != nil
	in.Accept = wire.Negotiate(r)
	if in.Modern {
		if e, bad := modern.Validate(r, msg, in.Params, in.Meta, perr); bad {
			m.obs.Refuse(w, in, e)
			return false
		}
	}
	if msg.Method == methods.ToolsCall {
		// Arguments that cannot be decoded are a tool-input error, which the
		// core's CallTool answers once it knows the tool: set them aside.
		if aerr := catalog.CheckNumbers(in.Params["arguments"]); aerr != nil {
			in.ArgumentsProblem = aerr
			in.Params["arguments"] = json.RawMessage("{}")
		}
	}
	if e, bad := wire.CheckNumbers(msg, in); bad {
		if !in.Modern {
			// As the SDK answers a method's error in the session dialect.
			e.Status = http.StatusOK
		}
		m.obs.Refuse(w, in, e)
		return false
	}
	return true
}
