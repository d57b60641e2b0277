// Command agent is a worker that serves an example agent as a tool: a
// Temporal workflow with a scripted planner (no model, no API key) that
// lists the tools of the stock server's MCP endpoint and calls two of them
// with package mcpcall, delay (long) and publish_report (it asks a person
// for approval, and the agent's own run asks it on). Run it beside the
// stock server (go run ./cmd/server); the tool "agent" appears in
// tools/list within seconds. examples/agent/README.md walks through it.
//
// It connects to Temporal with the Temporal CLI's variables (none set:
// localhost:7233, where go run ./cmd/server embeds Temporal) and reaches
// the MCP endpoint at OPENWOP_MCP_URL (default
// http://127.0.0.1:8080/mcp), with OPENWOP_API_KEY as its bearer key
// when the server has API keys.
package main

import (
	"cmp"
	"context"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/openwop/temporal-mcp/mcpcall"
	"github.com/openwop/temporal-mcp/workflows"
)

// TaskQueue is the task queue the agent's worker polls.
const TaskQueue = "agents"

func main() {
	c, err := client.Dial(envconfig.MustLoadDefaultClientOptions())
	if err != nil {
		log.Fatalln("connect to Temporal:", err)
	}
	defer c.Close()

	tools, err := Registry(cmp.Or(os.Getenv("OPENWOP_MCP_URL"), "http://127.0.0.1:8080/mcp"), os.Getenv("OPENWOP_API_KEY"))
	if err != nil {
		log.Fatalln(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Printf("serving the tool agent on task queue %s", TaskQueue)
	if err := tools.Run(ctx, c, TaskQueue, workflows.WorkerOptions{}); err != nil {
		log.Fatalln(err)
	}
}

// Registry is the agent tool with the activities that reach the MCP
// endpoint at url as the server Server, with key as its bearer key when
// not empty. The key stays in the worker: workflow code and its history
// name only the server.
func Registry(url, key string) (*workflows.Registry, error) {
	s := mcpcall.Server{URL: url}
	if key != "" {
		s.Header = http.Header{"Authorization": {"Bearer " + key}}
	}
	acts, err := mcpcall.NewActivities(map[string]mcpcall.Server{Server: s})
	if err != nil {
		return nil, err
	}
	return workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("agent",
			"An example agent: lists the server's tools, waits with delay, then publishes a report with publish_report, whose approval it asks you.",
			Agent, workflows.Suspends(), workflows.WithTitle("Example agent"),
			workflows.WithRange("delayMs", 0, 600_000), workflows.WithLength("topic", 1, 200),
			workflows.WithDestructiveHint(false), workflows.WithOpenWorldHint(false)),
	}, acts)
}
