package modern

import (
	"context"

	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
)

// Options configure the dialect. Parts.Core, Parts.Log and Listening are
// required.
type Options struct {
	wire.Parts
	// Listening ends when the mount shuts down: every
	// subscriptions/listen stream then ends.
	Listening context.Context
}

// Dialect serves 2026-07-28 requests over HTTP and stdio.
type Dialect struct {
	wire.Parts
	tracker   *ownership.Tracker
	listening context.Context
}

// New builds the dialect.
func New(o Options) *Dialect {
	return &Dialect{Parts: o.Parts, tracker: o.Core.Tracker(), listening: o.Listening}
}
