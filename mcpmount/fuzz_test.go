package mcpmount

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/modern"
	"github.com/openwop/temporal-mcp/mcpmount/internal/session"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
)

// The fuzz target of what a caller sends the mount: a POST body and the
// headers the 2026-07-28 checks compare it with (FuzzDecode); the
// inputResponses of tasks/update and MRTR retries are fuzzed in the core
// (internal/core, FuzzInputResponses). It runs the mount's own decoders
// without a run service: everything it reaches before a method handler is
// pure. scripts/test.sh runs each
// for a few seconds; docs/testing.md says how to run them longer.

// fuzzWireSeeds are request bodies of the wire tests (TestWireGolden,
// TestHTTP*, TestBatch*), kept literal.
var fuzzWireSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"abc","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"}}}}`,
	`{"jsonrpc":"2.0","id":"a<&>é","method":"tasks/get","params":{"taskId":"abc","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"abc","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":[]},"io.modelcontextprotocol/clientInfo":{"name":5}}}}`,
	`{"jsonrpc":"2.0","id":21,"method":"tasks/get","params":{"taskId":8,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":"yes"},"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`,
	`{"jsonrpc":"2.0","id":11,"method":"tasks/update","params":{"taskId":"abc","inputResponses":5,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`,
	`{"jsonrpc":"2.0","id":12,"method":"tasks/update","params":{"taskId":"abc","inputResponses":{"k":{"action":"maybe"}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`,
	`{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"conformance-delay","arguments":{"delayMs":1e999},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	`{"jsonrpc":"2.0","id":56,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},"requestState":"garbage","inputResponses":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`,
	`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"delay","arguments":{"delayMs":1e309}}}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":true,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`,
	`{"jsonrpc":"1.0","id":7,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11,"reason":"user gave up"}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
	`[]`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":[[[[[[1]]]]]]}}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
}

// FuzzDecode feeds the mount's decoding of a POST (Mount.decode, and for
// a batch session.CheckBatch) arbitrary bodies and 2026-07-28 headers. It
// must not panic; a refusal must be one JSON-RPC error whose id is null or
// a valid id, of bounded size; a request it accepts must have a valid
// envelope that decodes the same after encoding, and, when it is a
// 2026-07-28 request, a supported method and version whose _meta the
// method handlers then decode consistently.
func FuzzDecode(f *testing.F) {
	for _, body := range fuzzWireSeeds {
		method, name := "", ""
		var msg wire.Message
		if json.Unmarshal([]byte(body), &msg) == nil {
			method = msg.Method
			var p struct {
				Name   string `json:"name"`
				TaskID string `json:"taskId"`
			}
			_ = json.Unmarshal(msg.Params, &p)
			name = p.Name + p.TaskID
		}
		f.Add([]byte(body), ProtocolVersion, method, name)
		f.Add([]byte(body), "", "", "")
	}
	f.Add(rpcBody(9, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}}, tasksCaps()),
		ProtocolVersion, "tools/call", "=?base64?Z3JlZXQ=?=")
	f.Add(rpcBody("x", "subscriptions/listen", nil, map[string]any{}), "2025-11-25", "subscriptions/listen", "")
	f.Fuzz(func(t *testing.T, body []byte, version, method, name string) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		for h, v := range map[string]string{modern.HeaderProtocolVersion: version, modern.HeaderMethod: method, modern.HeaderName: name} {
			if v != "" {
				r.Header.Set(h, v)
			}
		}
		m := &Mount{}
		in := &wire.Incoming{Header: r.Header, Body: body}
		w := httptest.NewRecorder()
		if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' && wire.NestingDepth(body) <= wire.MaxNesting {
			// A batch that passes goes to the SDK's handler: check the
			// batch alone.
			if e, bad := session.CheckBatch(trimmed); bad {
				m.obs.Refuse(w, in, e)
				checkRefusal(t, w, len(body)+len(version)+len(method)+len(name))
			}
			return
		}
		if !m.decode(w, r, in) {
			checkRefusal(t, w, len(body)+len(version)+len(method)+len(name))
			return
		}
		checkAccepted(t, r, in)
	})
}

// checkRefusal checks the answer decode wrote to a request it did not
// accept: 202 with nothing for a notification, otherwise one JSON-RPC
// error with a null or valid id, at most a bounded multiple of what was
// sent.
func checkRefusal(t *testing.T, w *httptest.ResponseRecorder, sent int) {
	t.Helper()
	if w.Code == http.StatusAccepted {
		if w.Body.Len() != 0 {
			t.Fatalf("202 with a body %q", w.Body)
		}
		return
	}
	if w.Code < 200 || w.Code > 599 {
		t.Fatalf("status %d", w.Code)
	}
	if limit := 8*sent + 1024; w.Body.Len() > limit {
		t.Fatalf("refusal of %d bytes for %d bytes sent (limit %d)", w.Body.Len(), sent, limit)
	}
	var out struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("refusal is not JSON: %v: %q", err, w.Body)
	}
	if out.JSONRPC != "2.0" || out.Error == nil || out.Error.Code == 0 || out.Error.Message == "" {
		t.Fatalf("refusal is not a JSON-RPC error: %s", w.Body)
	}
	if string(out.ID) != "null" && !wire.ValidID(out.ID) {
		t.Fatalf("refusal echoes the invalid id %s", out.ID)
	}
}

// checkAccepted checks a request decode accepted.
func checkAccepted(t *testing.T, r *http.Request, in *wire.Incoming) {
	t.Helper()
	msg := in.Msg
	if msg.JSONRPC != "2.0" || msg.Method == "" || !wire.ValidID(msg.ID) {
		t.Fatalf("accepted an invalid envelope: %+v", msg)
	}
	// decode → encode → decode is stable.
	enc, err := json.Marshal(msg)
	if err != nil {
		t.Fatalf("encode the accepted message: %v", err)
	}
	var again wire.Message
	if err := json.Unmarshal(enc, &again); err != nil {
		t.Fatalf("decode the encoded message: %v", err)
	}
	if again.Method != msg.Method || !bytes.Equal(wire.CanonicalID(again.ID), wire.CanonicalID(msg.ID)) {
		t.Fatalf("round trip changed the message: %+v -> %+v", msg, again)
	}
	// The id is echoed as a valid id, the same after a second pass.
	id := wire.CanonicalID(msg.ID)
	if !wire.ValidID(id) || !bytes.Equal(wire.CanonicalID(id), id) {
		t.Fatalf("canonicalID(%s) = %s, not stable", msg.ID, id)
	}
	body, _ := wire.EncodeResponse(msg.ID, nil, core.InvalidParams("x"))
	var resp struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || !bytes.Equal(resp.ID, id) {
		t.Fatalf("response %s does not echo the id %s (%v)", body, id, err)
	}
	if !in.Modern {
		return
	}
	if !modern.Served(msg.Method) {
		t.Fatalf("accepted the 2026-07-28 method %q", msg.Method)
	}
	var v string
	if json.Unmarshal(in.Meta[mcp.MetaKeyProtocolVersion], &v) != nil || v != ProtocolVersion {
		t.Fatalf("accepted the _meta version %s", in.Meta[mcp.MetaKeyProtocolVersion])
	}
	tasks, err := modern.CheckMetaTriple(in.Meta)
	if err == nil && tasks != core.CapsFromRaw(in.Meta[mcp.MetaKeyClientCapabilities]).Tasks() {
		t.Fatalf("checkMetaTriple and capsFromRaw disagree on the Tasks extension: %s", in.Meta[mcp.MetaKeyClientCapabilities])
	}
	if msg.Method == "tools/call" {
		if call, problem := modern.DecodeCall(r.Header, in); call == nil && problem == "" {
			t.Fatal("decodeCall returned neither a call nor a problem")
		}
	}
}
