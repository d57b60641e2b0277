// Command refund is a worker that serves the refund tool: run it beside
// the stock server (go run ./cmd/server in the adapter's repository) and
// the tool appears in tools/list within seconds.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/openwop/temporal-mcp/workflows"
)

func main() {
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions())
	if err != nil {
		log.Fatalln("connect to Temporal:", err)
	}
	defer c.Close()

	tools, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("refund", "Refund an order after a human approves it.", Refund, workflows.Suspends(),
			workflows.WithTitle("Refund an order"), workflows.WithDestructiveHint(true)), // a refund cannot be taken back
	}, IssueRefund)
	if err != nil {
		log.Fatalln(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := tools.Run(ctx, c, "refunds", workflows.WorkerOptions{}); err != nil {
		log.Fatalln(err)
	}
}
