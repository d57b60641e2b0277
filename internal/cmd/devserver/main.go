// Command devserver runs the embedded Temporal dev server
// (internal/app/devtemporal) as a process of its own, persisted in a SQLite
// file so that it survives a restart, kill -9 included. With cmd/worker and
// cmd/server (TEMPORAL_ADDRESS set, OPENWOP_WORKER=off) it makes the split
// deployment of three processes that internal/cmd/loadtest kills and
// restarts. It prints "ready <address>" on stdout once clients can dial it,
// and stops on SIGINT or SIGTERM. It is a development tool, not a
// production Temporal.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
)

func main() {
	db := flag.String("db", "temporal.db", "SQLite file (created if missing)")
	port := flag.Int("port", 7233, "frontend port on 127.0.0.1 (0: any free port)")
	flag.Parse()
	if err := run(*db, *port); err != nil {
		fmt.Fprintln(os.Stderr, "devserver:", err)
		os.Exit(1)
	}
}

func run(db string, port int) error {
	logger, err := zap.NewProduction()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	srv, err := devtemporal.Start(sctx, devtemporal.Options{DBFile: db, Port: port, Logger: logger})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	fmt.Println("ready", srv.Address())
	<-ctx.Done()
	return srv.Stop()
}
