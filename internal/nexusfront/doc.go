// Package nexusfront exposes the catalog's tools as a Nexus service, so
// that a workflow in another namespace calls a tool as a Nexus operation
// (workflow.NewNexusClient in the Go SDK) through an endpoint that
// targets the task queue of a worker registering the service.
//
// Each tool is one asynchronous operation of the same name. Its input is
// the tool's arguments (a JSON object), its output the run's result: the
// value the tool's workflow returns. Starting the operation starts a run
// through runs.Backend.Start like any MCP or REST call (the tenant-prefixed
// run id, the start request, memo, search attributes and audit), with
// transport signals.TransportNexus and the Nexus request id as the
// idempotency key; the workflow is started with
// temporalnexus.ExecuteUntypedWorkflow, which attaches the operation's
// completion callback, so Temporal delivers the run's result (or failure,
// or cancellation) to the caller. Cancelling the operation cancels the run
// (runs.Backend.Cancel).
//
// Who calls: Temporal names the caller's namespace in the link to the
// caller's workflow that comes with every start request. Options.Tenants
// maps it to the tenant the run belongs to, and the run's owner is the
// subject "nexus:<namespace>" of issuer "nexus". A caller whose namespace
// is not mapped, or that names none, is refused with an UNAUTHORIZED
// handler error. A cancel request names no caller: it is honoured for a
// run of a mapped tenant, the only runs this service starts.
//
// The operations of NewService's service are those of the catalog's tools
// when it runs. Serve follows the catalog: it replaces its worker with one
// of the tools listed now whenever the set of names changes, so a tool
// published later becomes an operation within ServeOptions.Recheck.
package nexusfront
