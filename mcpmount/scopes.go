package mcpmount

import (
	"encoding/json"
	"net/http"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
)

// Per-tool scopes. A tool may need OAuth scopes (signals.ToolSpec.Scopes):
// tools/list (wire.Lister) leaves it out for a caller whose token lacks one
// (ToolSpec.OfferedTo), and a call of it is refused before anything else
// about the call is looked at. Over HTTP permitCall refuses it with 403 and
// the Bearer challenge, before the request reaches its dialect; every
// dialect's tools/call passes the core's lookupTool, which refuses it again
// (over stdio, or should the catalog change in between) with a JSON-RPC
// error. An API key is not scoped (Subject.MissingScope), so it is never
// refused here. Reads and answers of an existing task are not affected.

// permitCall refuses, over HTTP, a tools/call of a tool whose scopes the
// caller's token lacks: 403 with the insufficient_scope challenge that names
// the scopes needed and the resource metadata, as a token without the
// required scopes is refused, and a JSON-RPC error of the same message. It
// lets every other request through, and leaves an unknown or unavailable
// tool to the core's CallTool, which answers it as for any caller.
func (m *Mount) permitCall(w http.ResponseWriter, r *http.Request, in *wire.Incoming) bool {
	if in.Msg.Method != methods.ToolsCall || !in.Caller.Scoped {
		return true
	}
	var name string
	if json.Unmarshal(in.Params["name"], &name) != nil || name == "" {
		return true
	}
	t, err := m.catalog.Lookup(r.Context(), name)
	if err != nil || !t.Spec().VisibleTo(in.Caller.Tenant) {
		return true
	}
	refusal := m.core.ScopeRefusal(in.Caller, t.Spec())
	if refusal == nil {
		return true
	}
	auth.Challenge(w, refusal)
	e := wire.Unauthorized(refusal)
	e.ID = in.Msg.ID
	m.obs.Refuse(w, in, e)
	return false
}
