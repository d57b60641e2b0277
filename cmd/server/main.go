package main

import (
	"flag"
	"os"

	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
)

func main() {
	stdio := flag.Bool("stdio", false, "serve one MCP client on stdin/stdout (logs go to stderr)")
	flag.Usage = func() {
		config.Usage(flag.CommandLine.Output(), app.Summary, flag.CommandLine, config.ServerVars())
	}
	flag.Parse()
	if err := app.Main(*stdio); err != nil {
		os.Exit(1)
	}
}
