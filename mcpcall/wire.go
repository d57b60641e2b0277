package mcpcall

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"

	"go.temporal.io/sdk/temporal"
)

// The 2026-07-28 wire: every request is one stateless POST that carries
// the protocol version, the client's capabilities and (for tasks/*) the
// Tasks extension in its _meta, and the headers that repeat the method
// and its name.
const (
	protocolVersion = "2026-07-28"
	extensionTasks  = "io.modelcontextprotocol/tasks"
	metaVersion     = "io.modelcontextprotocol/protocolVersion"
	metaCaps        = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo  = "io.modelcontextprotocol/clientInfo"
)

// MetaIdempotencyKey is the params._meta key under which every tools/call
// carries the call's idempotency key. The temporal-mcp server honours it
// (a retried call with the same key answers the run the first one
// started); MCP defines no such key, so other servers ignore it.
const MetaIdempotencyKey = "io.openwop/idempotencyKey"

// RPCError is a JSON-RPC error a server answered a request with.
type RPCError struct {
	// Code is the JSON-RPC error code.
	Code int `json:"code"`
	// Message is the server's message.
	Message string `json:"message"`
	// Data is the error's data, if any.
	Data json.RawMessage `json:"data,omitempty"`
}

// Error implements error.
func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// httpError is an HTTP answer that carries no JSON-RPC response.
type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.status, strings.TrimSpace(e.body))
}

// wireClient speaks JSON-RPC over streamable HTTP: 2026-07-28, one
// stateless POST per request, or (legacy) 2025-11-25 in the session its
// initialize opened. An answer comes in JSON or as an SSE stream.
type wireClient struct {
	url    string
	header http.Header
	http   *http.Client
	// onNotify, when set, sees every notification the server sends while
	// a request is in flight.
	onNotify func(method string, params json.RawMessage)
	// legacy makes the client speak 2025-11-25 (legacy.go).
	legacy bool
	// session is the legacy session's Mcp-Session-Id, once opened.
	session string
	seq     atomic.Int64
}

// request sends method with params (to which it adds meta, and at
// 2026-07-28 the required _meta) and decodes the result into out. name
// is the 2026-07-28 Mcp-Name header ("" for none).
func (c *wireClient) request(ctx context.Context, method, name string, params map[string]any, meta map[string]any, out any) error {
	m := map[string]any{}
	if !c.legacy {
		m[metaVersion] = protocolVersion
		m[metaCaps] = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "extensions": map[string]any{extensionTasks: map[string]any{}}}
		m[metaClientInfo] = map[string]any{"name": "mcpcall", "version": "1"}
	}
	for k, v := range meta {
		m[k] = v
	}
	if params == nil {
		params = map[string]any{}
	}
	if len(m) > 0 {
		params["_meta"] = m
	}
	id := c.seq.Add(1)
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
	resp, err := c.post(ctx, method, name, msg)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := c.response(resp, id)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s: decode result: %w", method, err)
		}
	}
	return nil
}

// post POSTs msg with the headers of the client's dialect and keeps the
// session id a legacy server answers with.
func (c *wireClient) post(ctx context.Context, method, name string, msg map[string]any) (*http.Response, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range c.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	switch {
	case !c.legacy:
		req.Header.Set("MCP-Protocol-Version", protocolVersion)
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", headerValue(name))
		}
	case c.session != "":
		req.Header.Set("MCP-Protocol-Version", legacyVersion)
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	hc := c.http
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if id := resp.Header.Get("Mcp-Session-Id"); c.legacy && c.session == "" && id != "" {
		c.session = id
	}
	return resp, nil
}

// rpcMessage is a JSON-RPC response or notification.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// response reads the answer to request id from resp: a JSON body or an
// SSE stream whose notifications go to onNotify.
func (c *wireClient) response(resp *http.Response, id int64) (json.RawMessage, error) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		return c.stream(resp.Body, id)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	var msg rpcMessage
	if ct != "application/json" || json.Unmarshal(body, &msg) != nil || (msg.Error == nil && msg.Result == nil) {
		return nil, &httpError{status: resp.StatusCode, body: string(body)}
	}
	return msg.answer()
}

// answer returns the result of a response, or its error.
func (m rpcMessage) answer() (json.RawMessage, error) {
	if m.Error != nil {
		return nil, m.Error
	}
	return m.Result, nil
}

// stream reads SSE events until the response to id.
func (c *wireClient) stream(r io.Reader, id int64) (json.RawMessage, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data strings.Builder
	want := fmt.Sprint(id)
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			data.WriteString(strings.TrimPrefix(d, " "))
			continue
		}
		if line != "" || data.Len() == 0 {
			continue
		}
		var msg rpcMessage
		err := json.Unmarshal([]byte(data.String()), &msg)
		data.Reset()
		switch {
		case err != nil:
			return nil, fmt.Errorf("decode event: %w", err)
		case msg.Method != "" && len(msg.ID) == 0:
			if c.onNotify != nil {
				c.onNotify(msg.Method, msg.Params)
			}
		case string(msg.ID) == want:
			return msg.answer()
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read event stream: %w", err)
	}
	return nil, errors.New("the event stream ended without the response")
}

// headerValue encodes v for an Mcp-Name header: as is when it is visible
// ASCII, else in the =?base64?...?= form.
func headerValue(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		}
	}
	if strings.HasPrefix(v, "=?base64?") {
		return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
	}
	return v
}

// legacyOnly reports whether err says the server does not speak
// 2026-07-28 (its version refused, or an HTTP answer that is no JSON-RPC
// response, as a session-era server gives a request without a session).
func legacyOnly(err error) bool {
	var rpc *RPCError
	if errors.As(err, &rpc) {
		return rpc.Code == -32022
	}
	var h *httpError
	return errors.As(err, &h) && h.status >= 400 && h.status < 500 && h.status != http.StatusUnauthorized && h.status != http.StatusForbidden
}

// rpcErrorType is the type of the application error that carries a
// server's JSON-RPC error out of an activity.
const rpcErrorType = "mcpcall.RPCError"

// final makes the error of an activity final when retrying cannot help:
// a server's JSON-RPC error (carried as details, so that the workflow
// side gets the *RPCError back) or an HTTP answer refusing the request.
func final(err error) error {
	var rpc *RPCError
	if errors.As(err, &rpc) {
		return temporal.NewNonRetryableApplicationError(err.Error(), rpcErrorType, err, *rpc)
	}
	var h *httpError
	if errors.As(err, &h) && h.status >= 400 && h.status < 500 && h.status != http.StatusRequestTimeout && h.status != http.StatusTooManyRequests {
		return temporal.NewNonRetryableApplicationError(err.Error(), "mcpcall.HTTPError", err)
	}
	return err
}
