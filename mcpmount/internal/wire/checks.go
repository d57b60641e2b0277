package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/openwop/temporal-mcp/catalog"
)

// MaxNesting is the deepest nesting of arrays and objects a message may
// have, the message object itself counting as one level: the SDK's JSON
// decoder refuses deeper ones.
const MaxNesting = 1000

// NestingDepth returns the deepest nesting of arrays and objects in the
// JSON text b (strings skipped). It does not validate b.
func NestingDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}

// ValidID reports whether raw is a JSON-RPC request id this server can
// answer: a string or an integer (fitting 64 bits). The SDK would refuse
// other ids in plain text, or truncate a fractional one.
func ValidID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// ErrInvalidID returns the -32600 answer to an id that is not a string or an
// integer. The id cannot be echoed, so the answer's id is null.
func ErrInvalidID(raw json.RawMessage) Refusal {
	shown := string(bytes.TrimSpace(raw))
	if len(shown) > 40 {
		shown = shown[:37] + "..."
	}
	return Refusal{Status: http.StatusBadRequest, Code: CodeInvalidRequest,
		Message: fmt.Sprintf("invalid request: the id %s is not a string or an integer", shown)}
}

// CheckEnvelope checks a decoded single message: JSON-RPC 2.0, a method,
// and an id (when present) that is a string or an integer.
func CheckEnvelope(msg *Message) (Refusal, bool) {
	if msg.JSONRPC != "2.0" || msg.Method == "" || string(msg.ID) == "null" {
		id := msg.ID
		if len(id) > 0 && !ValidID(id) {
			id = nil
		}
		return Refusal{Status: http.StatusBadRequest, ID: id, Code: CodeInvalidRequest,
			Message: `invalid request: want a JSON-RPC 2.0 request or notification with a method`}, true
	}
	if len(msg.ID) > 0 && !ValidID(msg.ID) {
		return ErrInvalidID(msg.ID), true
	}
	return Refusal{}, false
}

// CheckNumbers refuses a request whose params hold a number a 64-bit float
// cannot represent (e.g. 1e309), which the SDK could not decode: -32602
// naming where it is. (Such a number in tools/call arguments was set aside
// before, in in.ArgumentsProblem.) The status is 400; the caller sets the
// session dialect's.
func CheckNumbers(msg *Message, in *Incoming) (Refusal, bool) {
	raw := msg.Params
	if in.ArgumentsProblem != nil {
		raw, _ = json.Marshal(in.Params) // with the arguments set aside
	}
	err := catalog.CheckNumbers(raw)
	if err == nil {
		return Refusal{}, false
	}
	return Refusal{Status: http.StatusBadRequest, ID: msg.ID, Code: CodeInvalidParams,
		Message: "invalid params: " + ParamsPath(err)}, true
}

// ParamsPath words a NumberRangeError found in params.
func ParamsPath(err error) string {
	var nre *catalog.NumberRangeError
	if errors.As(err, &nre) && nre.Path != "" {
		e := *nre
		e.Path = "params." + e.Path
		return e.Error()
	}
	return err.Error()
}
