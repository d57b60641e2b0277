package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/operator"
)

func main() {
	stdio := flag.Bool("stdio", false, "serve one MCP client on stdin/stdout (logs go to stderr)")
	flag.Usage = func() {
		config.Usage(flag.CommandLine.Output(), app.Summary, flag.CommandLine, config.ServerVars())
		fmt.Fprintf(flag.CommandLine.Output(), "\n%s", operator.Commands)
	}
	flag.Parse()
	if flag.NArg() > 0 {
		// An operator command (versions ...): it connects to Temporal
		// as the server does, and serves nothing.
		os.Exit(operator.Main(context.Background(), flag.Args(), envconfig.EnvLookupOS, os.Stdout, os.Stderr))
	}
	if err := app.Main(*stdio); err != nil {
		os.Exit(1)
	}
}
