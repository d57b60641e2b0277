// Package config is what cmd/server and cmd/worker share: the process
// configuration read from the environment (including the Temporal client
// options, through the SDK's envconfig), the zap logger and its adapter for
// the Temporal SDK, and the Temporal dial.
//
// Every environment variable the commands read is declared here, once, in
// one table (Vars: its names, default, meaning, which commands read it and
// how it is read). LoadConfig (cmd/worker) and LoadServer (cmd/server) read
// the table's variables; Usage writes -h from it; and a test checks
// docs/configuration.md's table of variables against it. The libraries the
// commands assemble (auth, audit, telemetry/export, ...) read no
// environment: they take options.
//
// It must not depend on the Temporal server (go.temporal.io/server): the
// worker binary is built from it, and only cmd/server embeds a Temporal
// server (internal/app, internal/app/devtemporal).
package config
