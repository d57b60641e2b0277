// Package httpgate is the one request gate of the server's HTTP routes: the
// MCP mount (/mcp), the REST runs API and the discovery document all pass
// it before anything else. It checks
//
//   - the Host header (DNS-rebinding protection): a request that arrived on
//     a loopback address must name a loopback host or a configured one; with
//     hosts configured (the public URL's, the allowed hosts) a request on any
//     other address must name one of them;
//   - the Origin header: absent, configured (the public URL's origin, the
//     allowed origins), or a loopback origin on a request that arrived on a
//     loopback address;
//   - the media type of request bodies: application/json.
//
// A Gate only decides; each surface writes the refusal in its own error
// shape (a JSON-RPC error on /mcp, {"error":{...}} on REST).
package httpgate
