// Package catalog is the tool catalog: which tools exist, where their runs
// execute, and the one compiler of their input schemas.
//
// The catalog lives in Temporal, not in the server binary (docs/catalog.md).
// A worker publishes the specs of the tools it serves with Publish when it
// starts (package workflows does it for Go workers); the server reads what
// live workers published with a Live source and starts each run on its
// tool's task queue. A Static source serves a fixed list, e.g. for tests or
// for tools declared in a file (LoadDeclarations).
//
// A Source answers compiled tools: a Tool holds its spec and its resolved
// input schemas, and validates arguments and pre-run input answers. The MCP
// mount and the REST API both read tools from a Source.
package catalog
