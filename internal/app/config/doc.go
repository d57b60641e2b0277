// Package config is what cmd/server and cmd/worker share: the process
// configuration read from the environment (including the Temporal client
// options, through the SDK's envconfig), the zap logger and its adapter for
// the Temporal SDK, and the Temporal dial.
//
// It must not depend on the Temporal server (go.temporal.io/server): the
// worker binary is built from it, and only cmd/server embeds a Temporal
// server (internal/app, internal/app/devtemporal).
package config
