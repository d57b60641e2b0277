package auth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ResourcePath is the path of the MCP endpoint: the protected resource of
// OAuth is the public base URL followed by it.
const ResourcePath = "/mcp"

// MetadataPath is where RFC 9728 protected-resource metadata lives; the
// metadata of the resource <base>/mcp is at <base>/.well-known/oauth-protected-resource/mcp.
const MetadataPath = "/.well-known/oauth-protected-resource"

// ResourceMetadataURL is the URL of the protected-resource metadata of the
// server whose public base URL is base ("" when base is ""): the URL the
// challenges name in resource_metadata.
func ResourceMetadataURL(base string) string {
	if base == "" {
		return ""
	}
	return strings.TrimSuffix(base, "/") + MetadataPath + ResourcePath
}

// RFC 6750 error codes of a Bearer challenge.
const (
	// CodeInvalidToken: the token presented is expired, malformed, not
	// issued for this resource or otherwise not accepted.
	CodeInvalidToken = "invalid_token"
	// CodeInsufficientScope: the token is valid but lacks a scope the
	// request needs.
	CodeInsufficientScope = "insufficient_scope"
)

// Refusal is an authentication or authorization refusal: the status (401
// or 403) and the Bearer challenge of WWW-Authenticate. Its Error is the
// reason, safe to show to the caller (it never contains the credential).
type Refusal struct {
	// Status is http.StatusUnauthorized or http.StatusForbidden.
	Status int
	// Code is the RFC 6750 error code ("" when no credential was
	// presented).
	Code string
	// Scopes are the scopes named in the challenge: those the request
	// needs.
	Scopes []string
	// Metadata is the resource_metadata URL of the challenge ("": none).
	Metadata string
	// Reason says what was wrong.
	Reason string
	err    error
}

// Error returns the reason.
func (r *Refusal) Error() string { return r.Reason }

// Unwrap returns the underlying error (ErrNoCredential,
// ErrInvalidCredential, ...).
func (r *Refusal) Unwrap() error { return r.err }

// Challenge is the value of the WWW-Authenticate header.
func (r *Refusal) Challenge() string {
	var params []string
	if r.Code != "" {
		params = append(params, fmt.Sprintf("error=%q", r.Code))
		if d := challengeSafe(r.Reason); d != "" {
			params = append(params, fmt.Sprintf("error_description=%q", d))
		}
	}
	if r.Metadata != "" {
		params = append(params, fmt.Sprintf("resource_metadata=%q", r.Metadata))
	}
	if len(r.Scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(r.Scopes, " ")))
	}
	if len(params) == 0 {
		return `Bearer realm="openwop"`
	}
	return "Bearer " + strings.Join(params, ", ")
}

// challengeSafe keeps the characters RFC 6750 allows in error_description
// (%x20-21 / %x23-5B / %x5D-7E).
func challengeSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return -1
		}
		return r
	}, s)
}

// InsufficientScope is the 403 refusal of a request that needs scopes
// the caller's token does not grant; metadata is the resource_metadata URL
// (ResourceMetadataURL). The scopes are named in the challenge (step-up
// authorization) and in the reason.
func InsufficientScope(metadata string, scopes ...string) *Refusal {
	return &Refusal{Status: http.StatusForbidden, Code: CodeInsufficientScope, Scopes: scopes, Metadata: metadata,
		Reason: "insufficient scope: this request needs the scope " + strings.Join(scopes, " ")}
}

// Challenge sets the WWW-Authenticate header of the response to a request
// refused with err: the Refusal's challenge, or a plain Bearer challenge.
func Challenge(w http.ResponseWriter, err error) {
	var r *Refusal
	if errors.As(err, &r) {
		w.Header().Set("WWW-Authenticate", r.Challenge())
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="openwop"`)
}

// Status is the HTTP status of a request refused with err: the Refusal's,
// or 401.
func Status(err error) int {
	var r *Refusal
	if errors.As(err, &r) && r.Status != 0 {
		return r.Status
	}
	return http.StatusUnauthorized
}
