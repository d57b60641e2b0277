// Package ownership implements the request-ownership rule of RFC 0198 §G:
// until the host has sent its whole response to a request that starts or
// continues a run, that request owns the run, and if the request goes away
// first (an HTTP disconnect, a stdio notifications/cancelled, stdin EOF) the
// run is cancelled with reason mcp-request-cancelled. Once the response is
// sent, nothing that happens to the connection touches the run.
//
// One mechanism serves every transport. A transport adapter (Tracker.HTTP
// for streamable HTTP, Tracker.Transport for stdio) opens a Claim for each
// incoming request and hands it to the request's handler (the func HTTP
// wraps, the Route of a stream). The handler that starts or resumes a run
// records the run with Claim.Own. When the adapter knows whether the
// response was delivered, it settles the claim: delivered runs are
// released, the others are cancelled. A handler the claim must reach
// through a library that carries no Go values (the go-sdk's server) is the
// caller's concern: package session keys its claims by a header.
package ownership
