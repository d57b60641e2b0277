package restapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// permitStart refuses the start of a tool whose scopes the caller's token
// lacks: 403 forbidden with the insufficient_scope challenge naming the
// scopes needed and the resource metadata, as a token without the
// required scopes is refused; the refusal is audited. An API key is not
// scoped, and passes.
func (h *handler) permitStart(w http.ResponseWriter, caller signals.Subject, spec signals.ToolSpec) bool {
	if _, missing := caller.MissingScope(spec.Scopes); !missing {
		return true
	}
	refusal := h.oauth.InsufficientScope(spec.Scopes...)
	refusal.Reason = fmt.Sprintf("insufficient scope: the workflow %s needs the scope %s", spec.Name, strings.Join(refusal.Scopes, " "))
	h.audit.Write(audit.ScopeRefusal(caller, spec.Name, signals.TransportREST, refusal.Scopes))
	auth.Challenge(w, refusal)
	writeError(w, http.StatusForbidden, "forbidden", refusal.Error())
	return false
}
