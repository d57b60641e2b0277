// Package clientmatrix holds the client matrix test: real MCP clients that
// nobody here wrote, pinned in testdata/package-lock.json (the official
// TypeScript client with the Tasks extension, the TypeScript SDK v1, the MCP
// Inspector, whose web client runs in headless Chromium) plus the go-sdk
// client and scripts shaped like hosts (Claude Code's and VS Code's task
// flows), each driving cmd/server end to end and asserting the outcome its
// own API reports. It has no code besides the test; see TestClientMatrix for
// how to run it.
package clientmatrix
