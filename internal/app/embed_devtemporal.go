//go:build !mountonly

package app

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/datadir"
	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
)

// This file links the embedded Temporal server (internal/app/devtemporal,
// and with it go.temporal.io/server). A build with the mountonly tag
// leaves it out (embed_none.go): see embeddedServer.

// startEmbedded starts the embedded server on the locked data directory,
// its frontend on port (0: a free one), and publishes it in the directory.
func (a *App) startEmbedded(ctx context.Context, cfg config.Config, lock *datadir.Lock, port int) (embeddedServer, error) {
	level := cfg.TemporalLogLevel
	uiPort := 0 // no UI
	if cfg.UI {
		var err error
		if uiPort, err = pickUIPort(cfg.UIPort); err != nil {
			return nil, err
		}
	}
	srv, err := devtemporal.Start(ctx, devtemporal.Options{
		DBFile:    filepath.Join(lock.Dir(), config.DBFileName),
		Port:      port,
		Namespace: cfg.Namespace(),
		Logger:    a.Logger.Named("temporal-server"),
		LogLevel:  &level,
		UIPort:    uiPort,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded Temporal server (ports: %s, %s; 0 = any free port): %w",
			config.EnvTemporalPort, config.EnvUIPort, err)
	}
	if err := lock.Publish(datadir.Holder{TemporalAddress: srv.Address(), Namespace: srv.Namespace(), UIURL: srv.UIURL()}); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	return srv, nil
}

// pickUIPort returns port, or for 0 a free port on 127.0.0.1 (where the
// embedded Web UI listens).
func pickUIPort(port int) (int, error) {
	if port != 0 {
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("embedded Web UI: pick a free port (%s=0): %w", config.EnvUIPort, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
