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
	var opts devtemporal.Options
	var pg devtemporal.Postgres
	flag.StringVar(&opts.DBFile, "db", "temporal.db", "SQLite file (created if missing); ignored with -postgres")
	flag.IntVar(&opts.Port, "port", 7233, "frontend port on 127.0.0.1 (0: any free port)")
	flag.StringVar(&pg.Address, "postgres", "", "PostgreSQL host:port to persist in (databases created if missing) instead of SQLite")
	flag.StringVar(&pg.User, "postgres-user", "postgres", "PostgreSQL user (password: $DEVSERVER_POSTGRES_PASSWORD)")
	flag.BoolVar(&opts.ClusterNode, "cluster", false, "be one node of a cluster on the -postgres database: ports -port to -port+8, membership through the database")
	flag.IntVar(&opts.HistoryShards, "shards", 1, "history shards, fixed when the database is created")
	flag.Parse()
	if pg.Address != "" {
		pg.Password = os.Getenv("DEVSERVER_POSTGRES_PASSWORD")
		opts.Postgres = &pg
	}
	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "devserver:", err)
		os.Exit(1)
	}
}

func run(opts devtemporal.Options) error {
	logger, err := zap.NewProduction()
	if err != nil {
		return err
	}
	opts.Logger = logger
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	srv, err := devtemporal.Start(sctx, opts)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	fmt.Println("ready", srv.Address())
	<-ctx.Done()
	return srv.Stop()
}
