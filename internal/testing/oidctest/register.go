package oidctest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// registrationPath is the provider's RFC 7591 registration endpoint,
// advertised as registration_endpoint in its discovery document.
const registrationPath = "/register"

// maxRegistration bounds a registration request's body.
const maxRegistration = 64 << 10

// Registration is the client metadata of an RFC 7591 registration
// request, and of its response (with the client id).
type Registration struct {
	ClientID                string   `json:"client_id,omitempty"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// register is the registration endpoint: it registers public clients
// (token_endpoint_auth_method none, PKCE) of the authorization code flow
// with the redirect URIs they name, as native clients (https, loopback
// http or a private scheme), and answers 201 with the client id, or 400
// with invalid_redirect_uri or invalid_client_metadata naming what was
// wrong.
func (s *store) register(w http.ResponseWriter, r *http.Request) {
	var m Registration
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRegistration))
	if err := dec.Decode(&m); err != nil {
		oauthError(w, "invalid_client_metadata", "the body is not a JSON client metadata document: "+err.Error())
		return
	}
	if code, err := m.check(); err != nil {
		oauthError(w, code, err.Error())
		return
	}
	m.TokenEndpointAuthMethod = "none"
	if len(m.GrantTypes) == 0 {
		m.GrantTypes = []string{"authorization_code"}
	}
	if len(m.ResponseTypes) == 0 {
		m.ResponseTypes = []string{"code"}
	}
	m.ClientID = "dyn-" + rand.Text()[:16]
	m.ClientIDIssuedAt = time.Now().Unix()
	s.mu.Lock()
	s.registered[m.ClientID] = storage.NativeClient(m.ClientID, m.RedirectURIs...)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(m)
}

// check returns the RFC 7591 error code and the reason a registration is
// refused, or nil.
func (m *Registration) check() (string, error) {
	if len(m.RedirectURIs) == 0 {
		return "invalid_redirect_uri", fmt.Errorf("redirect_uris is required")
	}
	for _, u := range m.RedirectURIs {
		if err := checkRedirect(u); err != nil {
			return "invalid_redirect_uri", fmt.Errorf("redirect_uris: %q: %w", u, err)
		}
	}
	if m.TokenEndpointAuthMethod != "" && m.TokenEndpointAuthMethod != "none" {
		return "invalid_client_metadata", fmt.Errorf("token_endpoint_auth_method %q: only public clients (none, with PKCE) are registered", m.TokenEndpointAuthMethod)
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return "invalid_client_metadata", fmt.Errorf("grant_types: %q is not offered (authorization_code, refresh_token)", g)
		}
	}
	for _, t := range m.ResponseTypes {
		if t != "code" {
			return "invalid_client_metadata", fmt.Errorf("response_types: %q is not offered (code)", t)
		}
	}
	return "", nil
}

// checkRedirect accepts the redirect URIs of a native client: absolute,
// without a fragment, https, http on a loopback host, or a private scheme.
func checkRedirect(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch {
	case !u.IsAbs():
		return fmt.Errorf("not an absolute URI")
	case u.Fragment != "":
		return fmt.Errorf("has a fragment")
	case u.Scheme == "http":
		if _, loopback := op.HTTPLoopbackOrLocalhost(raw); !loopback {
			return fmt.Errorf("http is only for a loopback host")
		}
	case u.Scheme == "https":
		if u.Host == "" {
			return fmt.Errorf("has no host")
		}
	case slices.Contains([]string{"javascript", "data", "file", "vbscript"}, u.Scheme):
		return fmt.Errorf("the scheme %s is not a redirect", u.Scheme)
	}
	return nil
}
