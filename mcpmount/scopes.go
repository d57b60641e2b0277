package mcpmount

import (
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// Per-tool scopes. A tool may need OAuth scopes (signals.ToolSpec.Scopes):
// listTools leaves it out for a caller whose token lacks one
// (ToolSpec.OfferedTo), and a call of it is refused before anything else
// about the call is looked at. Over HTTP permitCall refuses it with 403
// and the Bearer challenge, before the request reaches its dialect; every
// dialect's tools/call passes lookupTool, which refuses it again (over
// stdio, or should the catalog change in between) with a JSON-RPC error.
// An API key is not scoped (Subject.MissingScope), so it is never refused
// here. Reads and answers of an existing task are not affected.

// scopeRefusal is the refusal of a call of the tool by caller when the
// caller's token lacks one of the tool's scopes, nil when it grants them
// all (or is not scoped). The refusal is written to the audit trail.
func (m *Mount) scopeRefusal(caller signals.Subject, spec signals.ToolSpec) *auth.Refusal {
	refusal := m.oauth.ToolRefusal(caller, "tool", spec.Name, spec.Scopes)
	if refusal == nil {
		return nil
	}
	m.audit.Write(audit.ScopeRefusal(caller, spec.Name, signals.TransportMCP, refusal.Scopes))
	return refusal
}

// errInsufficientScope is the JSON-RPC error of a call refused for want
// of scope: the message of the HTTP refusal (unauthorized), naming the
// scopes.
func errInsufficientScope(r *auth.Refusal) *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeInvalidRequest, Message: unauthorized(r).message}
}

// permitCall refuses, over HTTP, a tools/call of a tool whose scopes the
// caller's token lacks: 403 with the insufficient_scope challenge that
// names the scopes needed and the resource metadata, as a token without
// the required scopes is refused, and a JSON-RPC error of the same
// message. It lets every other request through, and leaves an unknown or
// unavailable tool to callTool, which answers it as for any caller.
func (m *Mount) permitCall(w http.ResponseWriter, r *http.Request, in *incoming) bool {
	if in.msg.Method != "tools/call" || !in.caller.Scoped {
		return true
	}
	var name string
	if json.Unmarshal(in.params["name"], &name) != nil || name == "" {
		return true
	}
	t, err := m.catalog.Lookup(r.Context(), name)
	if err != nil || !t.Spec().VisibleTo(in.caller.Tenant) {
		return true
	}
	refusal := m.scopeRefusal(in.caller, t.Spec())
	if refusal == nil {
		return true
	}
	auth.Challenge(w, refusal)
	e := unauthorized(refusal)
	e.id = in.msg.ID
	m.refuse(w, in, e)
	return false
}
