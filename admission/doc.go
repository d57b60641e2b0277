// Package admission bounds the work a server takes on, so that overload is
// answered at once instead of by slow calls and timeouts. A Controller
// counts three things:
//
//   - run starts in progress (all tenants together), bounded by
//     Options.MaxStarts;
//   - blocking calls waiting for their runs (all tenants together), bounded
//     by Options.MaxWaiting;
//   - each tenant's calls holding either, bounded by Options.TenantMax, so
//     that one tenant cannot take every slot and starve the others.
//
// A call asks for what it needs (Admit) before any run starts and gets a
// Ticket, or a *Rejection that tells the caller when to retry. The MCP mount
// (mcpmount.Options.Admission) and the REST API (restapi.Options.Admission)
// share one Controller, so the limits hold across both.
package admission
