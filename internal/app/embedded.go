package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/datadir"
)

// holderWait bounds the wait for the holder of the data directory to
// publish its server when this process only reports it (no ShareDataDir).
const holderWait = 10 * time.Second

// MountOnlyTag is the build tag of a binary without the embedded Temporal
// server: `go build -tags mountonly ./cmd/server` links no
// go.temporal.io/server package, so a mount-only process (TEMPORAL_ADDRESS
// set, OPENWOP_WORKER=off) does not pay for it. That server's packages are
// large, and their initialisation at start-up alone maps most of the
// stock binary's code and data into memory (about 90 MiB resident in a
// process that never starts it). Without TEMPORAL_ADDRESS such a build
// refuses to start, naming the setting.
const MountOnlyTag = "mountonly"

// embeddedServer is the embedded Temporal server as the process uses it
// (*devtemporal.Server in the stock build).
type embeddedServer interface {
	Address() string
	Namespace() string
	UIURL() string
	DBFile() string
	Stop() error
}

// connect starts the embedded server (unless remote) and dials the client.
// The data directory is locked first (internal/app/datadir): when another
// process holds it, this one uses that process's server with
// cfg.ShareDataDir, and fails naming it otherwise.
func (a *App) connect(ctx context.Context, cfg config.Config) error {
	if !cfg.Remote {
		cctx := ctx
		if !cfg.ShareDataDir {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(ctx, holderWait)
			defer cancel()
		}
		lock, err := datadir.Claim(cctx, cfg.DataDir)
		var held *datadir.HeldError
		switch {
		case errors.As(err, &held) && cfg.ShareDataDir && held.Holder.TemporalAddress != "":
			if held.Holder.Namespace != cfg.Namespace() {
				return fmt.Errorf("%w; its namespace is not %s (%s)", err, cfg.Namespace(), config.EnvTemporalNamespace)
			}
			h := held.Holder
			a.SharedFrom = &h
			a.Logger.Info("the data directory is in use by another process: using its Temporal server",
				zap.String("data", held.Dir), zap.Int("pid", h.PID), zap.String("temporal", h.TemporalAddress))
			cfg.Client = client.Options{HostPort: h.TemporalAddress, Namespace: h.Namespace}
		case held != nil:
			msg := fmt.Sprintf("stop it, or set %s to another directory", config.EnvDataDir)
			if held.Holder.TemporalAddress != "" {
				msg += fmt.Sprintf(", or set %s=%s to use its server", config.EnvTemporalAddress, held.Holder.TemporalAddress)
			}
			return fmt.Errorf("%w: %s", err, msg)
		case err != nil:
			return err
		default:
			srv, err := a.startEmbedded(ctx, cfg, lock, cfg.TemporalPort)
			if err != nil {
				_ = lock.Release()
				return err
			}
			a.server, a.lock, a.Embedded = srv, lock, true
			a.UIURL, a.DBFile = srv.UIURL(), srv.DBFile()
			cfg.Client = client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()}
		}
	}
	c, err := cfg.Dial(ctx, a.Logger, a.Telemetry)
	if err != nil {
		return err
	}
	a.Client, a.TemporalAddress = c, cfg.HostPort()
	if a.SharedFrom != nil {
		a.watchHolder(cfg)
	}
	return nil
}

// embedded reports whether the Temporal server runs in this process now.
func (a *App) embedded() bool {
	a.srvMu.Lock()
	defer a.srvMu.Unlock()
	return a.server != nil
}

// watchHolder waits, until Shutdown, for the process whose server this one
// uses (SharedFrom) to release the data directory, and then runs the
// embedded server on it, its frontend on the same address, so that the
// client (and everything built on it) reconnects to it. A failure to do so
// goes to Failed.
func (a *App) watchHolder(cfg config.Config) {
	ctx, cancel := context.WithCancel(context.Background())
	a.stopWatch, a.watchDone = cancel, make(chan struct{})
	prev := *a.SharedFrom
	go func() {
		defer close(a.watchDone)
		fail := func(err error) {
			if ctx.Err() == nil {
				a.failed <- fmt.Errorf("take over the data directory after process %d exited: %w", prev.PID, err)
			}
		}
		lock, err := datadir.Watch(ctx, cfg.DataDir)
		if err != nil {
			fail(err)
			return
		}
		a.Logger.Warn("the process whose Temporal server this one used exited: running the embedded server here",
			zap.Int("pid", prev.PID), zap.String("temporal", prev.TemporalAddress), zap.String("data", lock.Dir()))
		_, p, err := net.SplitHostPort(prev.TemporalAddress)
		port, perr := strconv.Atoi(p)
		if err != nil || perr != nil {
			_ = lock.Release()
			fail(fmt.Errorf("the holder's address %q: want 127.0.0.1:port", prev.TemporalAddress))
			return
		}
		sctx, scancel := context.WithTimeout(ctx, StartTimeout)
		defer scancel()
		srv, err := a.startEmbedded(sctx, cfg, lock, port)
		if err != nil {
			_ = lock.Release()
			fail(err)
			return
		}
		a.srvMu.Lock()
		a.server, a.lock = srv, lock
		a.srvMu.Unlock()
		close(a.tookOver)
		a.Logger.Info("embedded Temporal server running", zap.String("temporal", srv.Address()),
			zap.String("temporal_ui", srv.UIURL()), zap.String("data", srv.DBFile()))
	}()
}
