package session

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionElicits reports whether a session-dialect client can be asked
// questions with elicitation/create during a call: its session (HTTP session
// or stdio) declared form elicitation in initialize. A stateless request has
// no declared capabilities.
func sessionElicits(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false
	}
	e := ip.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil // {} means form
}

// sessionAsker is the session dialect's asker: an elicitation/create request
// on the session, which rides the call's stream.
type sessionAsker struct{ ss *mcp.ServerSession }

func (a sessionAsker) Ask(ctx context.Context, message string, requestedSchema any) (*mcp.ElicitResult, error) {
	return a.ss.Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: requestedSchema})
}
