package app

import (
	"context"
	"net/http"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/telemetry/export"
)

// Deps are what the handler and the worker are built from.
type Deps struct {
	// Logger is the process logger.
	Logger *zap.Logger
	// Client is connected to Namespace. App owns it: do not close it.
	Client client.Client
	// Namespace is the Temporal namespace runs live in.
	Namespace string
	// TaskQueue is the task queue of the in-process worker.
	TaskQueue string
	// DeploymentName and BuildID name the Worker Deployment version of
	// the in-process worker (empty: unversioned).
	DeploymentName, BuildID string
	// Telemetry is the process's tracing and metrics (each possibly off;
	// see package telemetry). Client already uses it.
	Telemetry *export.Telemetry
}

// Parts are the adapter-specific pieces App runs.
type Parts struct {
	// Handler builds the HTTP handler mounted at "/". nil serves only
	// /healthz.
	Handler func(Deps) (http.Handler, error)
	// Worker runs the in-process worker until ctx is done (then it returns
	// nil) or it fails; a failure ends the process. nil (or Config.Worker
	// false) runs no worker.
	Worker func(ctx context.Context, d Deps) error
	// WorkerReady, when set, reports whether the in-process worker is
	// serving (e.g. its tools are in the catalog). Start polls it, for at
	// most ReadyTimeout, before it reports the process ready.
	WorkerReady func(ctx context.Context) (bool, error)
	// OnShutdown, when set, runs as the HTTP server starts shutting down
	// (http.Server.RegisterOnShutdown), e.g. to end streams that would
	// otherwise hold the shutdown until its timeout.
	OnShutdown func()
	// Telemetry, when set, is used instead of the one Start builds from
	// the configuration (Config.Tracing, Config.MetricsAddr). Shutdown
	// shuts it down.
	Telemetry *export.Telemetry
	// Unserved, when set, names the task queues that no worker serves now,
	// and the versions of pinned runs no worker of that build serves
	// (runs.Service.UnservedQueues); /healthz then reports "degraded",
	// naming them. It is called only after Handler.
	Unserved func(ctx context.Context) ([]runs.Unserved, error)
	// Unreachable, when set, names the OAuth issuers whose metadata could
	// not be fetched yet, with the error of each (auth.OAuth.Unreachable);
	// /healthz then reports "degraded", naming them.
	Unreachable func() map[string]string
}
