package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"
)

func main() {
	o := options{}
	flag.IntVar(&o.clients, "clients", 200, "concurrent MCP clients")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "load phase; the kills are spread evenly over it")
	flag.DurationVar(&o.drain, "drain", 3*time.Minute, "time allowed after the load phase for every lifecycle to finish")
	flag.StringVar(&o.dir, "dir", "", "work directory (binaries, SQLite file, logs); default a new temporary one")
	flag.StringVar(&o.kills, "kill", "server,worker,temporal", "processes to kill -9 and restart during the load, in order (empty: none); with -persistence postgres, postgres (a crash and restart of PostgreSQL) is added unless -kill is given")
	flag.StringVar(&o.persistence, "persistence", "sqlite", "Temporal's persistence: sqlite (one dev server on a SQLite file) or postgres (PostgreSQL with SQL visibility, started in a temporary directory)")
	flag.IntVar(&o.temporalNodes, "temporal-nodes", 1, "Temporal server processes forming one cluster (more than 1 needs -persistence postgres); clients reach them through a TCP balancer")
	flag.IntVar(&o.replicas, "replicas", 1, "cmd/server replicas; more than 1 are behind the harness's HTTP load balancer")
	flag.IntVar(&o.workers, "workers", 0, "cmd/worker processes (0: as many as -replicas)")
	flag.Parse()
	killsGiven := false
	flag.Visit(func(f *flag.Flag) { killsGiven = killsGiven || f.Name == "kill" })
	if o.persistence == "postgres" && !killsGiven {
		o.kills += ",postgres"
	}
	if o.workers <= 0 {
		o.workers = o.replicas
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

type options struct {
	clients                          int
	duration, drain                  time.Duration
	dir, kills, persistence          string
	temporalNodes, replicas, workers int
}

func (o options) check() error {
	switch {
	case o.persistence != "sqlite" && o.persistence != "postgres":
		return fmt.Errorf("-persistence %q: want sqlite or postgres", o.persistence)
	case o.temporalNodes < 1 || o.replicas < 1:
		return errors.New("-temporal-nodes and -replicas must be at least 1")
	case o.temporalNodes > 1 && o.persistence != "postgres":
		return errors.New("-temporal-nodes above 1 needs -persistence postgres (SQLite is one process's file)")
	}
	return nil
}

func run(o options) error {
	if err := o.check(); err != nil {
		return err
	}
	if o.dir == "" {
		d, err := os.MkdirTemp("", "openwop-loadtest-")
		if err != nil {
			return err
		}
		o.dir = d
	}
	fmt.Println("work directory:", o.dir)
	if err := prepare(o.dir); err != nil {
		return err
	}
	d, err := newDeployment(o)
	if err != nil {
		return err
	}
	defer d.stop()
	if err := d.startAll(); err != nil {
		return err
	}
	fmt.Printf("%s ready: Temporal %s, mount %s; %d clients for %s\n", d.describe(), d.temporalAddr, d.base, o.clients, o.duration)

	st := &stats{}
	began := time.Now()
	loadEnd := began.Add(o.duration)
	drainEnd := loadEnd.Add(o.drain)
	var wg sync.WaitGroup
	clients := make([]*mcpClient, o.clients)
	for i := range clients {
		c := &mcpClient{url: d.base + "/mcp", st: st, idx: i, drainEnd: drainEnd}
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.loop(loadEnd)
		}()
	}
	if err := d.killInTurn(o.kills, loadEnd, o.duration); err != nil {
		return err
	}
	wg.Wait()
	d.footprint()
	fmt.Printf("%s load done after %s; auditing\n", time.Now().Format(time.TimeOnly), time.Since(began).Round(time.Second))
	return audit(d.temporalAddr, clients, st, o.duration)
}
