package wire

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
)

// This file is the mount's one JSON-RPC writer, its one content
// negotiation and its one SSE stream, which every dialect writes through.

// Message is one decoded JSON-RPC message of a POST body.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	// Result and Error are set on a response (a client answering a
	// request of the server).
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// Send writes one message on a message stream (stdio).
type Send func(ctx context.Context, msg jsonrpc.Message) error

// Refusal is a refusal of a request before any method ran, with the
// request id (null when unknown) and the HTTP status it is answered with.
type Refusal struct {
	Status  int
	ID      json.RawMessage
	Code    int64
	Message string
	Data    any
}

// refusal is the body of a refusal: its members in the order the mount
// has always written them (error, id, jsonrpc).
type refusal struct {
	Error   refusalError    `json:"error"`
	ID      json.RawMessage `json:"id"`
	JSONRPC string          `json:"jsonrpc"`
}

type refusalError struct {
	Code    int64  `json:"code"`
	Data    any    `json:"data,omitempty"`
	Message string `json:"message"`
}

// WriteRefusal writes a refusal.
func WriteRefusal(w http.ResponseWriter, e Refusal) {
	id := e.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(refusal{Error: refusalError{Code: e.Code, Data: e.Data, Message: e.Message}, ID: id, JSONRPC: "2.0"})
	WriteBody(w, b, e.Status)
}

// response is a JSON-RPC response as the mount encodes it: members in the
// order jsonrpc, id, result or error, nothing HTML-escaped.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// EncodeResponse encodes the response to the request id: res, or err (an
// error that is not a JSON-RPC error is an internal error). It returns the
// HTTP status SEP-2575 gives the error's code (404 for -32601; 400 for
// -32602, -32021 and -32022), 0 for a result or another error.
func EncodeResponse(id json.RawMessage, res mcp.Result, err error) ([]byte, int) {
	out := response{JSONRPC: "2.0", ID: CanonicalID(id)}
	status := 0
	if err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			rpcErr = core.Internal()
		}
		out.Error = rpcErr
		status = errorStatus(rpcErr.Code)
	} else {
		out.Result = res
	}
	body, merr := MarshalUnescaped(out)
	if merr != nil {
		out.Result, out.Error, status = nil, core.Internal(), 0
		body, _ = MarshalUnescaped(out)
	}
	return body, status
}

// errorStatus is the HTTP status SEP-2575 gives a JSON-RPC error code, 0
// when it gives none (the answer is 200).
func errorStatus(code int64) int {
	switch code {
	case CodeMethodNotFound:
		return http.StatusNotFound
	case CodeInvalidParams, CodeMissingCapability, CodeUnsupportedVersion:
		return http.StatusBadRequest
	}
	return 0
}

// WriteJSON writes an encoded message as an application/json response
// with status (0: 200).
func WriteJSON(w http.ResponseWriter, body []byte, status int) {
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	status = cmp.Or(status, http.StatusOK)
	WriteBody(w, body, status)
}

// WriteBody writes a whole application/json body with status. Its length
// is sent ahead (Content-Length): the ownership tracker flushes the
// response before the handler returns, which would otherwise make it a
// chunked one, ended by a write of its own.
func WriteBody(w http.ResponseWriter, body []byte, status int) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// WriteHeaderMismatch writes the -32020 answer to a request whose headers
// do not mirror its body, found after the checks of modern.Validate.
func WriteHeaderMismatch(w http.ResponseWriter, id json.RawMessage, message string) {
	body, _ := MarshalUnescaped(response{JSONRPC: "2.0", ID: CanonicalID(id),
		Error: &jsonrpc.Error{Code: CodeHeaderMismatch, Message: message}})
	WriteBody(w, body, http.StatusBadRequest)
}

// EncodeNotification encodes a JSON-RPC notification.
func EncodeNotification(method string, params any) ([]byte, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode %s params: %w", method, err)
	}
	return jsonrpc.EncodeMessage(&jsonrpc.Request{Method: method, Params: raw})
}

// MarshalUnescaped is json.Marshal without HTML escaping, as the SDK
// encodes its messages.
func MarshalUnescaped(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// CanonicalID returns a request id (a string or an integer; CheckEnvelope
// checked it) as the SDK echoes it: decoded and encoded again.
func CanonicalID(id json.RawMessage) json.RawMessage {
	id = bytes.TrimSpace(id)
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) != nil {
			return id
		}
		if b, err := MarshalUnescaped(s); err == nil {
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

// Negotiation is what a request's Accept header allows, read once.
type Negotiation struct {
	// JSONOK and StreamOK: the response types the Accept values allow,
	// wildcards included, read leniently as the SDK's transport reads them.
	JSONOK, StreamOK bool
	// PrefersSSE: text/event-stream is listed before application/json.
	PrefersSSE bool
	// ListsSSE: text/event-stream is listed.
	ListsSSE bool
}

// Negotiate reads the Accept header of r.
func Negotiate(r *http.Request) Negotiation {
	var n Negotiation
	decided := false // PrefersSSE is settled by the first of the two types
	for _, value := range r.Header.Values("Accept") {
		for _, part := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				n.JSONOK = true
			case "text/event-stream", "text/*":
				n.StreamOK = true
			case "*/*":
				n.JSONOK, n.StreamOK = true, true
			}
			if !strings.Contains(part, "/json") && !strings.Contains(part, "/event-stream") {
				continue // neither of the types that decide a preference
			}
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch mt {
			case "text/event-stream":
				n.ListsSSE = true
				if !decided {
					n.PrefersSSE, decided = true, true
				}
			case "application/json":
				decided = true
			}
		}
	}
	return n
}

// EventStream is an SSE response. Its writes are serialized, so that
// keep-alive comment lines go between whole events, whoever writes them:
// the mount's own handlers (event) or, as an http.ResponseWriter, the
// SDK's. Once stopped, nothing more is written by keep-alives.
type EventStream struct {
	// W is the response the stream writes to (a wrapper may replace it
	// before the stream is opened).
	W http.ResponseWriter

	mu      sync.Mutex
	started bool // headers sent by open
	stopped bool
	done    chan struct{}
	wg      sync.WaitGroup
}

func NewEventStream(w http.ResponseWriter) *EventStream {
	return &EventStream{W: w, done: make(chan struct{})}
}

// Header implements http.ResponseWriter.
func (s *EventStream) Header() http.Header { return s.W.Header() }

// WriteHeader forwards the status unless open sent the headers already.
func (s *EventStream) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return
	}
	s.W.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (s *EventStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.W.Write(p)
}

// Flush implements http.Flusher.
func (s *EventStream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = http.NewResponseController(s.W).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *EventStream) Unwrap() http.ResponseWriter { return s.W }

// Open sends the SSE response headers now (status 200), unless the
// response has started or the stream stopped.
func (s *EventStream) Open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	h := s.W.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.W.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(s.W).Flush()
	s.started = true
}

// Event writes one message as an SSE event and flushes it.
func (s *EventStream) Event(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b bytes.Buffer
	b.Grow(len("event: message\ndata: \n\n") + len(data))
	b.WriteString("event: message\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	_, _ = s.W.Write(b.Bytes())
	_ = http.NewResponseController(s.W).Flush()
}

// KeepAlive opens the stream and writes a comment line every interval
// until stop.
func (s *EventStream) KeepAlive(interval time.Duration) {
	s.Open()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		every(interval, s.done, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if !s.stopped {
				_, _ = s.W.Write([]byte(": keep-alive\n\n"))
				_ = http.NewResponseController(s.W).Flush()
			}
		})
	}()
}

// Stop ends the keep-alives and waits until none is being written. It may
// be called more than once.
func (s *EventStream) Stop() {
	s.mu.Lock()
	if !s.stopped {
		s.stopped = true
		close(s.done)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// every calls tick every interval until done is closed: the one keep-alive
// loop of the mount (SSE comment lines, progress heartbeats).
func every(interval time.Duration, done <-chan struct{}, tick func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			tick()
		}
	}
}
