// Package signals is the contract shared by the MCP mount and the tool
// workflows: the names of the Temporal query, signals and search attributes a
// run answers to, and the payload types that travel through them.
//
// Both sides import this package and nothing else of each other. It holds no
// Temporal types: every payload is a plain Go struct that the SDK's default
// JSON data converter encodes.
package signals
