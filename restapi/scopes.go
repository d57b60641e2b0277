package restapi

import (
	"net/http"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// permitStart refuses the start of a tool whose scopes the caller's token
// lacks: 403 forbidden with the insufficient_scope challenge naming the
// scopes needed and the resource metadata, as a token without the
// required scopes is refused; the refusal is reported (Options.ScopeRefused). An API key is not
// scoped, and passes.
func (h *handler) permitStart(w http.ResponseWriter, caller signals.Subject, spec signals.ToolSpec) bool {
	refusal := h.kit.OAuth().ToolRefusal(caller, "workflow", spec.Name, spec.Scopes)
	if refusal == nil {
		return true
	}
	if refused := h.kit.ScopeRefused(); refused != nil {
		refused(caller, signals.TransportREST, spec.Name, refusal.Scopes)
	}
	auth.Challenge(w, refusal)
	writeError(w, http.StatusForbidden, "forbidden", refusal.Error())
	return false
}
