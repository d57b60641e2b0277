package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// Incoming is one POST request as ServeHTTP decoded it, once, for the
// dialect that serves it.
type Incoming struct {
	Start  time.Time
	Header http.Header // the request's HTTP headers
	Caller signals.Subject
	Body   []byte
	Msg    Message
	// Params and Meta are the top-level fields of params and of its _meta.
	Params, Meta map[string]json.RawMessage
	// Session is the Mcp-Session-Id of a session-dialect request ("": none).
	Session string
	// Modern: a 2026-07-28 request (its header or _meta names the
	// per-request protocol).
	Modern bool
	Accept Negotiation
	// ArgumentsProblem is a number in tools/call arguments that a 64-bit
	// float cannot hold: a tool-input error, answered once the tool is
	// known.
	ArgumentsProblem error
}

// WriteUnauthorized answers a request whose credential was refused: 401
// (403 for a token without the required scopes) with the Bearer
// challenge.
func WriteUnauthorized(w http.ResponseWriter, err error) {
	auth.Challenge(w, err)
	WriteRefusal(w, Unauthorized(err))
}

// Unauthorized returns the JSON-RPC error of a refused credential.
func Unauthorized(err error) Refusal {
	status := auth.Status(err)
	prefix := "unauthorized: "
	if status == http.StatusForbidden {
		prefix = "forbidden: "
	}
	return Refusal{Status: status, Code: CodeInvalidRequest, Message: prefix + err.Error()}
}

// IsResponse reports whether msg, which names no method, is a JSON-RPC
// response: a valid id and a result or an error.
func IsResponse(msg *Message) bool {
	return msg.JSONRPC == "2.0" && ValidID(msg.ID) && (len(msg.Result) > 0 || len(msg.Error) > 0)
}

// DecodeParams splits params into its top-level fields and its _meta.
func DecodeParams(raw json.RawMessage) (map[string]json.RawMessage, map[string]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var params map[string]json.RawMessage
	if err := DecodeValid(raw, &params); err != nil {
		return nil, nil, errors.New("params must be an object")
	}
	var meta map[string]json.RawMessage
	if rawMeta, ok := params["_meta"]; ok {
		if err := DecodeValid(rawMeta, &meta); err != nil {
			return params, nil, errors.New("params._meta must be an object")
		}
	}
	return params, meta, nil
}

// DecodeValid is json.Unmarshal for raw, a part of a message that
// json.Unmarshal already found valid JSON: it decodes without checking
// that again.
func DecodeValid(raw json.RawMessage, v any) error {
	return json.NewDecoder(bytes.NewReader(raw)).Decode(v)
}

// HeaderProtocolVersion is the request header that names the protocol
// revision.
const HeaderProtocolVersion = "Mcp-Protocol-Version"

// ModernHeader reports whether the MCP-Protocol-Version header names a
// per-request protocol (anything but a session-dialect version).
func ModernHeader(r *http.Request) bool {
	v := r.Header.Get(HeaderProtocolVersion)
	return v != "" && !sessionVersion(v)
}
