package audit

import (
	"errors"
	"net/http"
	"strings"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// Authenticator returns authenticate with every refusal written to the
// trail: action authenticate, outcome refused, the refusal's reason and
// the address the request came from. Both edges call it once per request.
// With a nil trail it returns authenticate itself.
func (t *Trail) Authenticator(authenticate auth.Authenticator) auth.Authenticator {
	if t == nil || authenticate == nil {
		return authenticate
	}
	return func(r *http.Request) (signals.Subject, error) {
		s, err := authenticate(r)
		if err != nil {
			rec := Record{Action: ActionAuthenticate, Outcome: OutcomeRefused, Reason: credentialReason(err), Remote: r.RemoteAddr}
			var refusal *auth.Refusal
			if errors.As(err, &refusal) && refusal.Code == auth.CodeInsufficientScope {
				rec.Reason, rec.Scope = ReasonInsufficientScope, strings.Join(refusal.Scopes, " ")
			}
			t.Write(rec)
		}
		return s, err
	}
}

// credentialReason is the reason of a refused credential: a code for the
// auth errors, otherwise the error's text (an Authenticator's error never
// holds the credential: the caller is shown it).
func credentialReason(err error) string {
	switch {
	case errors.Is(err, auth.ErrNoCredential):
		return "missing-credential"
	case errors.Is(err, auth.ErrInvalidCredential):
		return "invalid-credential"
	}
	return err.Error()
}
