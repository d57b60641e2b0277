package modern

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/runs"
)

// Options configure the dialect. Core, Log and Listening are required.
type Options struct {
	Core      *core.Core
	Projector wire.Projector
	Observer  wire.Observer
	Lister    wire.Lister
	Log       *zap.Logger
	// Capabilities, Implementation and Instructions are what
	// server/discover answers; CacheTTLMs is its ttlMs.
	Capabilities   *mcp.ServerCapabilities
	Implementation *mcp.Implementation
	Instructions   string
	CacheTTLMs     int64
	// KeepAlive is the interval of SSE comments on a listen stream.
	KeepAlive time.Duration
	// Listening ends when the mount shuts down: every
	// subscriptions/listen stream then ends.
	Listening context.Context
}

// Dialect serves 2026-07-28 requests over HTTP.
type Dialect struct {
	core         *core.Core
	runs         runs.Backend
	tracker      *ownership.Tracker
	proj         wire.Projector
	obs          wire.Observer
	lister       wire.Lister
	log          *zap.Logger
	caps         *mcp.ServerCapabilities
	impl         *mcp.Implementation
	instructions string
	cacheTTLMs   int64
	keepAlive    time.Duration
	listening    context.Context
}

// New builds the dialect.
func New(o Options) *Dialect {
	return &Dialect{
		core: o.Core, runs: o.Core.Runs(), tracker: o.Core.Tracker(), proj: o.Projector, obs: o.Observer,
		lister: o.Lister, log: o.Log, caps: o.Capabilities, impl: o.Implementation, instructions: o.Instructions,
		cacheTTLMs: o.CacheTTLMs, keepAlive: o.KeepAlive, listening: o.Listening,
	}
}
