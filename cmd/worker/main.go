package main

import (
	"os"

	"github.com/openwop/temporal-mcp/internal/app/toolworker"
)

func main() {
	if err := toolworker.Main(); err != nil {
		os.Exit(1)
	}
}
