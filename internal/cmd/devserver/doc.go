// Command devserver runs the embedded Temporal dev server
// (internal/app/devtemporal) as a process of its own, persisted in a SQLite
// file so that it survives a restart, kill -9 included. With cmd/worker and
// cmd/server (TEMPORAL_ADDRESS set, OPENWOP_WORKER=off) it makes the split
// deployment of three processes that internal/cmd/loadtest kills and
// restarts.
//
// With -postgres it persists in PostgreSQL with SQL visibility instead,
// and with -cluster it is one node of a Temporal cluster: several devserver
// processes on one database, each with its own -port (the first of nine
// consecutive ports below 32768), share the cluster's -shards history
// shards. That is the production-shaped deployment of the load harness.
//
// It prints "ready <address>" on stdout once clients can dial it, and
// stops on SIGINT or SIGTERM. It is a development tool, not a production
// Temporal.
package main
