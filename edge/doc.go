// Package edge builds what the protocol edges share: the MCP mount
// (package mcpmount) and the REST API (package restapi) serve one run
// service to the same callers, behind the same request gate, and a server
// that serves both builds these pieces once, with New, and hands the Kit to
// each (mcpmount.Options.Kit, restapi.Options.Kit).
//
// A Kit holds the run service with the output check applied (every answer
// of a completed run checked against its tool's output schema,
// catalog.OutputCheck), the catalog, the authenticator and the OAuth
// resource server, the refused-scope hook, the request gate of Host and
// Origin (built from the public URL and the allowed hosts and origins),
// the tracer provider and the run-trace lookup, the admission control, and
// the limits of multi-round-trip requests (MRTR) that the mount enforces
// and the REST API's discovery document advertises.
package edge
