package mcpcall_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/mcpcall"
	"github.com/openwop/temporal-mcp/workflows"
)

// Research is a tool that calls another server's tool: a long one that
// may answer with a task and ask a question, which the caller of Research
// then answers.
func Research(ctx workflow.Context, in struct {
	Topic string `json:"topic"`
}) (string, error) {
	res, err := mcpcall.CallTool(ctx, "research", "deep_research", map[string]any{"topic": in.Topic}, nil)
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", workflows.Fail("research_failed", textOf(res))
	}
	return textOf(res), nil
}

// textOf joins the text blocks of a result.
func textOf(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			s += t.Text
		}
	}
	return s
}

// The worker names the server the workflow calls and holds its
// credentials; the activities go to the registry with the tool.
func Example() {
	acts, err := mcpcall.NewActivities(map[string]mcpcall.Server{
		"research": {URL: "https://research.example.com/mcp",
			Header: http.Header{"Authorization": {"Bearer " + "token-from-the-environment"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	tools, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("research", "Research a topic with the research server.", Research, workflows.Suspends()),
	}, acts)
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.Dial(client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(tools.Run(context.Background(), c, "research", workflows.WorkerOptions{}))
}

// An Answerer answers the tool's questions in code instead of asking a
// person.
func ExampleCallTool_answerer() {
	agent := func(ctx workflow.Context, _ struct{}) (string, error) {
		res, err := mcpcall.CallTool(ctx, "billing", "refund", map[string]any{"order": "A-1"}, &mcpcall.Options{
			Answer: func(ctx workflow.Context, q mcpcall.Question) (json.RawMessage, error) {
				return json.RawMessage(`{"action":"accept","content":{"confirm":true}}`), nil
			},
		})
		if err != nil {
			return "", err
		}
		return textOf(res), nil
	}
	fmt.Println(workflows.NewTool("refund_agent", "Refunds without asking.", agent).Spec().Name)
	// Output: refund_agent
}
