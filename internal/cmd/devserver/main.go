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
