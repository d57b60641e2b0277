package mcpmount

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/openwop/temporal-mcp/catalog"
)

// maxNesting is the deepest nesting of arrays and objects a message may
// have, the message object itself counting as one level: the SDK's JSON
// decoder refuses deeper ones.
const maxNesting = 1000

// nestingDepth returns the deepest nesting of arrays and objects in the
// JSON text b (strings skipped). It does not validate b.
func nestingDepth(b []byte) int {
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

// validID reports whether raw is a JSON-RPC request id this server can
// answer: a string or an integer (fitting 64 bits). The SDK would refuse
// other ids in plain text, or truncate a fractional one.
func validID(raw json.RawMessage) bool {
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

// errInvalidID is the -32600 answer to an id that is not a string or an
// integer. The id cannot be echoed, so the answer's id is null.
func errInvalidID(raw json.RawMessage) rpcError {
	shown := string(bytes.TrimSpace(raw))
	if len(shown) > 40 {
		shown = shown[:37] + "..."
	}
	return rpcError{status: http.StatusBadRequest, code: codeInvalidRequest,
		message: fmt.Sprintf("invalid request: the id %s is not a string or an integer", shown)}
}

// checkEnvelope checks a decoded single message: JSON-RPC 2.0, a method,
// and an id (when present) that is a string or an integer.
func checkEnvelope(msg *rpcMessage) (rpcError, bool) {
	if msg.JSONRPC != "2.0" || msg.Method == "" || string(msg.ID) == "null" {
		id := msg.ID
		if len(id) > 0 && !validID(id) {
			id = nil
		}
		return rpcError{status: http.StatusBadRequest, id: id, code: codeInvalidRequest,
			message: `invalid request: want a JSON-RPC 2.0 request or notification with a method`}, true
	}
	if len(msg.ID) > 0 && !validID(msg.ID) {
		return errInvalidID(msg.ID), true
	}
	return rpcError{}, false
}

// checkBatch checks a legacy JSON-RPC batch before the SDK sees it: not
// empty, every element an object with a valid id (when present) and no
// number a 64-bit float cannot represent.
func checkBatch(body []byte) (rpcError, bool) {
	var elems []json.RawMessage
	if err := json.Unmarshal(body, &elems); err != nil {
		return rpcError{status: http.StatusBadRequest, code: codeParseError, message: "parse error: " + err.Error()}, true
	}
	if len(elems) == 0 {
		return rpcError{status: http.StatusBadRequest, code: codeInvalidRequest,
			message: "invalid request: an empty JSON-RPC batch"}, true
	}
	for i, el := range elems {
		var msg rpcMessage
		if err := json.Unmarshal(el, &msg); err != nil {
			return rpcError{status: http.StatusBadRequest, code: codeInvalidRequest,
				message: fmt.Sprintf("invalid request: batch element %d is not a JSON-RPC message: %v", i, err)}, true
		}
		if len(msg.ID) > 0 && !validID(msg.ID) {
			e := errInvalidID(msg.ID)
			e.message = fmt.Sprintf("batch element %d: %s", i, e.message)
			return e, true
		}
		if err := catalog.CheckNumbers(msg.Params); err != nil {
			return rpcError{status: http.StatusBadRequest, code: codeInvalidParams,
				message: fmt.Sprintf("invalid params of batch element %d: %s", i, paramsPath(err))}, true
		}
	}
	return rpcError{}, false
}

// checkNumbers refuses a request whose params hold a number a 64-bit float
// cannot represent (e.g. 1e309), which the SDK could not decode: -32602
// naming where it is. (Such a number in tools/call arguments was set aside
// before, by setArgumentsAside.) The status is 400; the caller sets the
// legacy protocol's.
func checkNumbers(msg *rpcMessage) (rpcError, bool) {
	err := catalog.CheckNumbers(msg.Params)
	if err == nil {
		return rpcError{}, false
	}
	return rpcError{status: http.StatusBadRequest, id: msg.ID, code: codeInvalidParams,
		message: "invalid params: " + paramsPath(err)}, true
}

// argumentsProblemKey is the context key of a tools/call request's
// arguments problem found before the SDK decodes the request (an error).
type argumentsProblemKey struct{}

// setArgumentsAside replaces the arguments of a tools/call request that the
// SDK could not decode with {} and records problem in the request context,
// from where serveSDK hands it to callTool (in the request's httpCall),
// which answers the tool-input error. msg and params
// are updated; the returned request carries the rewritten body.
func setArgumentsAside(r *http.Request, msg *rpcMessage, params map[string]json.RawMessage, problem error) *http.Request {
	params["arguments"] = json.RawMessage("{}")
	raw, err := json.Marshal(params)
	if err != nil {
		return r // not reached: params came from JSON
	}
	msg.Params = raw
	body, err := json.Marshal(msg)
	if err != nil {
		return r
	}
	r = r.WithContext(context.WithValue(r.Context(), argumentsProblemKey{}, problem))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return r
}

// argumentsProblem is the problem setArgumentsAside recorded, if any.
func argumentsProblem(ctx context.Context) error {
	err, _ := ctx.Value(argumentsProblemKey{}).(error)
	return err
}

// paramsPath words a NumberRangeError found in params.
func paramsPath(err error) string {
	var nre *catalog.NumberRangeError
	if errors.As(err, &nre) && nre.Path != "" {
		e := *nre
		e.Path = "params." + e.Path
		return e.Error()
	}
	return err.Error()
}

// sdkNotHandled starts the SDK's plain-text refusal of a method it does
// not have.
const sdkNotHandled = "JSON RPC not handled"

// plainErrorWriter rewrites the SDK's plain-text transport errors (an
// http.Error: status >= 400, Content-Type text/plain) as JSON-RPC errors,
// so that no refusal on /mcp comes back as text. Everything else passes
// through untouched.
type plainErrorWriter struct {
	http.ResponseWriter
	id json.RawMessage
	// overload, when set, learns of a call refused by admission control,
	// whose answer the writer replaces: status 503 (200 for a legacy
	// request, !modern) with a Retry-After header.
	overload *overloadNote
	modern   bool

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
		status := http.StatusServiceUnavailable
		if !w.modern {
			status = http.StatusOK // as the SDK answers a legacy request's error
		}
		w.Header().Set("Retry-After", retryAfter(rej))
		writeRPCError(w.ResponseWriter, rpcError{status: status, id: w.id, code: codeInternalError,
			message: rej.Error(), data: overloadData(rej)})
		return
	}
	msg := strings.TrimSpace(w.buf.String())
	code := int64(codeInvalidRequest)
	switch {
	case strings.HasPrefix(msg, sdkNotHandled):
		// A method the server does not have, in the legacy protocol (a
		// 2026-07-28 one never gets here): answered as the SDK answers a
		// method's error in that protocol, 200 and -32601.
		code, w.status = codeMethodNotFound, http.StatusOK
	case w.status == http.StatusNotFound:
		code = codeMethodNotFound
	case w.status >= 500:
		code = codeInternalError
	case strings.HasPrefix(msg, "malformed payload"):
		code = codeParseError
	}
	writeRPCError(w.ResponseWriter, rpcError{status: w.status, id: w.id, code: code, message: msg})
}
