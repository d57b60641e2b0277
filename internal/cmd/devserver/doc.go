// Command devserver runs the embedded Temporal dev server
// (internal/app/devtemporal) as a process of its own, persisted in a SQLite
// file so that it survives a restart, kill -9 included. With cmd/worker and
// cmd/server (TEMPORAL_ADDRESS set, OPENWOP_WORKER=off) it makes the split
// deployment of three processes that internal/cmd/loadtest kills and
// restarts. It prints "ready <address>" on stdout once clients can dial it,
// and stops on SIGINT or SIGTERM. It is a development tool, not a
// production Temporal.
package main
