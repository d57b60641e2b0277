// Package restapi serves the OpenWOP v2 HTTP surface beside the MCP mount:
// the discovery document (GET /.well-known/openwop) and the REST runs API
// (createRun, getRun, listRuns, cancelRun, pollRunEvents,
// resolveInterruptByRun), described by the OpenAPI 3.1 document served at
// GET /openapi.json ([OpenAPI]).
//
// Every runs endpoint authenticates the caller with a bearer credential and
// acts for the caller's tenant only. Run operations go through a
// [runs.Backend] (*runs.Service in a server); this package knows nothing of
// Temporal. A server that serves the MCP mount too builds what the two
// share once, with package edge, and hands the one [edge.Kit] to both
// (Options.Kit): the run service, the catalog, the authenticator, the
// request gate, tracing, admission and the MRTR round cap, which the
// discovery document advertises and the mount enforces.
//
// Errors have one shape, {"error":{"code":"...","message":"..."}}, with
// OpenWOP snake_case codes (validation_error, id_tenant_mismatch,
// run_terminal, interrupt_already_resolved, ...).
package restapi
