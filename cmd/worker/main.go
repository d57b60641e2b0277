package main

import (
	"flag"
	"os"

	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/toolworker"
)

func main() {
	flag.Usage = func() {
		config.Usage(flag.CommandLine.Output(), toolworker.Summary, flag.CommandLine, config.WorkerVars())
	}
	flag.Parse()
	if err := toolworker.Main(); err != nil {
		os.Exit(1)
	}
}
