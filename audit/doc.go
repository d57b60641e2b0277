// Package audit writes the audit trail: one structured record for every
// run start, answer (the resolution of an interrupt) and cancellation, and
// for every request refused on authorization grounds (a missing or invalid
// credential, a run id of another tenant, a caller who is not an eligible
// approver).
//
// The trail is a log stream of its own, apart from the application log, so
// that an operator can ship it somewhere else: a Trail writes JSON lines to
// its sink (Open: stderr, stdout, a file path, or off; cmd/server takes it
// from OPENWOP_AUDIT_LOG). A record says who did what to which run, and how it went
// (Record); it never holds a credential or tool content: no token, no API
// key, no arguments, answers or results.
//
// The records are written in one place per action, where every protocol
// path passes: Trail.Backend decorates the runs.Backend that the MCP mount
// (every dialect) and the REST API share, and Trail.Authenticator wraps the
// auth.Authenticator both edges call once per request. A refusal found
// elsewhere (a missing scope, say) is written with Trail.Write.
package audit
