package app

import (
	"context"
	"time"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/nexusfront"
	"github.com/openwop/temporal-mcp/runs"
)

// NexusOptions configure the tools' Nexus service (package nexusfront)
// the in-process worker serves.
type NexusOptions struct {
	// TaskQueue is the task queue of the service's worker, the one the
	// Nexus endpoint targets.
	TaskQueue string
	// Tenants maps the caller namespaces to tenants
	// (nexusfront.Options.Tenants).
	Tenants map[string]string
}

// NexusOptionsOf are the Nexus options of cmd/server's settings sc
// (config.EnvNexusTenants, config.EnvNexusTaskQueue): nil, no Nexus
// service, when no namespace is mapped.
func NexusOptionsOf(sc config.ServerConfig) *NexusOptions {
	if len(sc.NexusTenants) == 0 {
		return nil
	}
	return &NexusOptions{TaskQueue: sc.NexusTaskQueue, Tenants: sc.NexusTenants}
}

// nexusReadyTimeout bounds the wait for the in-process worker's tools
// before the Nexus service is built with the tools the catalog lists.
const nexusReadyTimeout = 30 * time.Second

// serveNexus runs the worker of the tools' Nexus service until ctx is
// done, from the moment the catalog lists the in-process worker's tools
// (or nexusReadyTimeout passed); the service follows the catalog
// (nexusfront.Serve).
func (s *Server) serveNexus(ctx context.Context, d Deps, tools catalog.Source, backend runs.Backend) error {
	o := s.opts.Nexus
	s.waitTools(ctx, d)
	if ctx.Err() != nil {
		return nil
	}
	return nexusfront.Serve(ctx, d.Client, tools, backend, nexusfront.ServeOptions{
		Options: nexusfront.Options{Tenants: o.Tenants}, TaskQueue: o.TaskQueue, Logger: d.Logger.Named("nexus"),
	})
}

// waitTools waits until the catalog lists the in-process worker's tools,
// for at most nexusReadyTimeout.
func (s *Server) waitTools(ctx context.Context, d Deps) {
	ctx, cancel := context.WithTimeout(ctx, nexusReadyTimeout)
	defer cancel()
	for {
		if ok, _ := s.workerReady(ctx, d); ok {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(readyPoll):
		}
	}
}
