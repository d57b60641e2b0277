// Package runid mints run identifiers and converts them to and from their
// projected wire form.
//
// A runId is tenant-bound: "tenant/opaque", where the opaque part carries at
// least 128 bits from crypto/rand. The Temporal workflow ID of a run is its
// runId. On the wire (MCP taskId, REST path segments) the id is projected:
// every byte outside [A-Za-z0-9._-] becomes "~" and two uppercase hex digits.
package runid
