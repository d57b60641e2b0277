package catalog_test

import (
	"context"
	"log"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
)

// A hand-built worker (workflows.Registry.Run does all of this itself)
// publishes its tools, tells the catalog every WorkerHeartbeatInterval
// that it is alive, and, when it stops, withdraws its publication before
// it stops its Temporal worker.
func ExampleHeartbeat() {
	ctx := context.Background()
	c, err := client.Dial(client.Options{})
	if err != nil {
		log.Fatalln(err)
	}
	defer c.Close()
	pub := signals.Publication{TaskQueue: "reports", Identity: "worker-7", Tools: []signals.ToolSpec{ /* ... */ }}
	ns, err := catalog.ClientNamespace(ctx, c)
	if err != nil {
		log.Fatalln(err)
	}
	hb := catalog.Heartbeat{Namespace: ns, Publication: pub, Started: time.Now()}
	if err := hb.Send(ctx, c, false); err != nil {
		log.Println(err) // a server without worker heartbeats: pollers decide
	}
	if err := catalog.Publish(ctx, c, pub); err != nil {
		log.Fatalln(err)
	}
	stop := make(chan struct{}) // closed when the worker is told to stop
	go func() {
		tick := time.NewTicker(catalog.WorkerHeartbeatInterval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if err := hb.Send(ctx, c, false); err != nil {
					log.Println(err)
				}
			}
		}
	}()
	// ... run the Temporal worker until it is told to stop ...
	close(stop)
	_ = catalog.Withdraw(ctx, c, pub.TaskQueue, pub.Identity)
	_ = hb.Send(ctx, c, true) // stopping: gone at once
}
