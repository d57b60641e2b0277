package operator

import (
	"context"
	"flag"
	"fmt"
	"io"

	nexuspb "go.temporal.io/api/nexus/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/internal/app/config"
)

func createEndpointCommand() command {
	return command{
		name: "create-endpoint", args: "-name NAME -target-namespace NS [-target-task-queue QUEUE]",
		summary: "Creates the Nexus endpoint through which workflows of other namespaces call the tools as Nexus operations\n" +
			"(docs/nexus.md): it targets the task queue of the tools' Nexus service (cmd/server with " + config.EnvNexusTenants + ")\n" +
			"in the namespace the adapter's runs live in. Temporal refuses a name that is taken.",
		flags: func(fs *flag.FlagSet) func(context.Context, client.Client, io.Writer) error {
			name := fs.String("name", "", required+"the endpoint's name (letters, digits and -, starting with a letter)")
			ns := fs.String("target-namespace", "", required+"the namespace the adapter's runs live in (TEMPORAL_NAMESPACE of cmd/server; default for the embedded server)")
			queue := fs.String("target-task-queue", config.DefaultNexusTaskQueue, "the task queue of the tools' Nexus service ("+config.EnvNexusTaskQueue+")")
			return func(ctx context.Context, c client.Client, out io.Writer) error {
				return createEndpoint(ctx, c, *name, *ns, *queue, out)
			}
		},
	}
}

// createEndpoint creates the Nexus endpoint name that targets queue of
// namespace ns.
func createEndpoint(ctx context.Context, c client.Client, name, ns, queue string, out io.Writer) error {
	resp, err := c.OperatorService().CreateNexusEndpoint(ctx, &operatorservice.CreateNexusEndpointRequest{Spec: &nexuspb.EndpointSpec{
		Name: name,
		Target: &nexuspb.EndpointTarget{Variant: &nexuspb.EndpointTarget_Worker_{Worker: &nexuspb.EndpointTarget_Worker{
			Namespace: ns, TaskQueue: queue,
		}}},
	}})
	if err != nil {
		return fmt.Errorf("create Nexus endpoint %q: %w", name, err)
	}
	fmt.Fprintf(out, "Nexus endpoint %s (id %s): namespace %s, task queue %s\n", name, resp.GetEndpoint().GetId(), ns, queue)
	return nil
}
