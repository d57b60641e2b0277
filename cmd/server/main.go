package main

import (
	"os"

	"github.com/openwop/temporal-mcp/internal/app"
)

func main() {
	if err := app.Main(); err != nil {
		os.Exit(1)
	}
}
