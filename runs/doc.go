// Package runs is the one place that turns run operations (start, getRun,
// resolveInterruptByRun, cancelRun, listRuns, pollRunEvents) into Temporal
// client calls. The MCP mount and the REST API both use it through one
// interface, Backend, which *Service implements on Temporal; neither talks
// to Temporal directly, and nothing here knows about MCP or HTTP.
//
// Every method takes the caller's Subject. A run whose tenant segment is not
// the caller's tenant is refused with ErrTenantMismatch before any lookup, so
// the answer never depends on whether the run exists.
//
// Each operation is in a file of its own: start.go (Start; settle.go for a
// start whose outcome is unknown, journal.go for Release and Recover),
// read.go (Get and every read of a run the other operations share),
// events.go, resolve.go, cancel.go, await.go (watch.go for the follower
// that the callers waiting on one run share), list.go and trace.go
// (StartTrace, which is not part of Backend: the edges take it as a
// function). The options that make an operation faster where the caller
// allows it (AllowStale, Held, PublishedOnly) are in options.go. What
// they share is in service.go (the Service, its Options and New), memo.go
// (what the service remembers of runs) and workers.go (whether workers
// serve a task queue).
package runs
