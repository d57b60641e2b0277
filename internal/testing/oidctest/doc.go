// Package oidctest runs a real OpenID provider for tests: zitadel/oidc's op
// package (the provider implementation Zitadel ships) over its example
// in-memory storage, on a loopback port.
//
// A client logs in as an MCP host does: it finds the provider's metadata by
// OpenID discovery, registers itself at the registration endpoint the
// metadata names (RFC 7591; public clients only) or uses the
// pre-registered client (Options.ClientID), and runs the authorization code
// flow with PKCE (S256 required) and a resource indicator (RFC 8707, one
// of Options.Audience, required). The person's step is the provider's
// username/password page, which a test completes with an HTTP client
// (Login) and a script with fetch. The access tokens are JWTs signed with
// keys the provider publishes at its jwks_uri and can rotate (RotateKey);
// their aud is the resource the authorization request named, and they
// carry the user's claims (a tenant, groups) and the granted scopes. A test
// can also sign tokens of its own shape with the provider's key (Sign) or
// with a key the provider never published (SignUnpublished).
package oidctest
