package runs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// A run service used directly, without the MCP mount or the REST API: find
// the tool in the catalog its workers publish, check the arguments against
// its schema, start a run as a caller and wait for it to end. Another
// process (a worker of the "refunds" task queue) runs the tool; this one
// needs only a Temporal client. The mount and the REST API take the same
// service as their Options.Runs.
func ExampleNew() {
	c, err := client.Dial(client.Options{}) // localhost:7233
	if err != nil {
		log.Fatalln("connect to Temporal:", err)
	}
	defer c.Close()
	// EnsureSearchAttributes registers the attributes runs are listed by;
	// a server does it once at start-up.
	if err := runs.EnsureSearchAttributes(context.Background(), c, runs.DefaultNamespace); err != nil {
		log.Fatalln(err)
	}
	svc := runs.New(c, zap.NewNop(), runs.Options{TaskQueue: "refunds"})
	tools, err := catalog.NewLive(c, catalog.LiveOptions{Namespace: runs.DefaultNamespace})
	if err != nil {
		log.Fatalln(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tool, err := tools.Lookup(ctx, "refund")
	if err != nil {
		log.Fatalln(err)
	}
	args, err := tool.ValidateArguments(json.RawMessage(`{"orderId":"A-1001","amountCents":2500}`))
	if err != nil {
		log.Fatalln(err)
	}
	caller := signals.Subject{Issuer: "example", SubjectID: "alice", Tenant: "acme"}
	snap, err := svc.Start(ctx, runs.NewRun{
		Tool: tool.Spec(), Arguments: args, Caller: caller, Transport: signals.TransportREST,
	})
	if err != nil {
		log.Fatalln(err)
	}
	// The refund waits for an approval (svc.Resolve answers it); Await
	// returns once the run ends or ctx is done.
	snap, err = svc.Await(ctx, caller, snap.RunID, func(s signals.Snapshot) bool { return s.Status.Terminal() })
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println(snap.RunID, snap.Status)
}
