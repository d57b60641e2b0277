// Package oidctest runs a real OpenID provider for tests: zitadel/oidc's op
// package (the provider implementation Zitadel ships) over its example
// in-memory storage, on a loopback port. Its access tokens are JWTs signed
// with keys it publishes at its jwks_uri and can rotate (RotateKey); a test
// logs in on its login page with an HTTP client (Login), as a person would
// in a browser, and can sign tokens of its own shape with the provider's
// key (Sign) or with a key the provider never published (SignUnpublished).
package oidctest
