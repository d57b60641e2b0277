//go:build mountonly

package app

import (
	"context"
	"fmt"

	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/datadir"
)

// startEmbedded refuses: a build with the mountonly tag links no Temporal
// server, so it serves only a Temporal it connects to.
func (a *App) startEmbedded(context.Context, config.Config, *datadir.Lock, int) (embeddedServer, error) {
	return nil, fmt.Errorf("this build embeds no Temporal server (built with -tags %s): set %s to the Temporal frontend to use",
		MountOnlyTag, config.EnvTemporalAddress)
}
