package wire

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
)

// Parts are what every dialect is built from: the core, what this
// package offers them, and what the server says of itself. A dialect
// embeds them.
type Parts struct {
	Core      *core.Core
	Projector Projector
	Observer  Observer
	Lister    Lister
	// Results serves the resources of runs' results.
	Results *core.Results
	Log     *zap.Logger
	// Capabilities, Implementation and Instructions are what the server
	// says of itself (initialize, server/discover); CacheTTLMs is the
	// ttlMs of cacheable results.
	Capabilities   *mcp.ServerCapabilities
	Implementation *mcp.Implementation
	Instructions   string
	CacheTTLMs     int64
	// KeepAlive is the interval of SSE comments on a response or stream
	// that waits.
	KeepAlive time.Duration
}
