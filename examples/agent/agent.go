package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/mcpcall"
	"github.com/openwop/temporal-mcp/workflows"
)

// Server is the name the agent's workflow code gives the stock server's
// MCP endpoint; the worker maps it to a URL and credentials (main.go).
const Server = "stock"

// Input is what the person who starts the agent passes.
type Input struct {
	Topic   string `json:"topic" jsonschema:"what the report is about"`
	DelayMs int64  `json:"delayMs,omitempty" jsonschema:"how long the long tool (delay) waits, in milliseconds (default 5000)"`
}

// Output is the agent's result: the tools it saw and what each call it
// made answered.
type Output struct {
	Tools []string `json:"tools"`
	Calls []Called `json:"calls"`
}

// Called is one call the agent made and the text of its result.
type Called struct {
	Tool   string `json:"tool"`
	Result string `json:"result"`
}

// ResultText implements workflows.ResultTexter.
func (o Output) ResultText() string {
	var lines []string
	for _, c := range o.Calls {
		lines = append(lines, c.Tool+": "+c.Result)
	}
	return strings.Join(lines, "\n")
}

// call is one step of the agent's plan: a tool of the server and its
// arguments. The step is named after the tool, so the run's status
// message, its event log and a question's node say which call it is at.
type call struct {
	tool string
	args map[string]any
}

// plan is the scripted planner: where an agent would ask a model what to
// do next, it returns the same two calls every time, a long one and one
// that asks a person.
func plan(in Input) []call {
	delay := in.DelayMs
	if delay <= 0 {
		delay = 5000
	}
	return []call{
		{tool: "delay", args: map[string]any{"delayMs": delay}},
		{tool: "publish_report", args: map[string]any{"title": "Report on " + in.Topic, "topic": in.Topic}},
	}
}

// Agent lists the tools of the stock server, checks that the plan's tools
// are among them, and calls each in a step of its own with
// mcpcall.CallTool. A question the inner tool asks (publish_report's
// approval) is asked by this run, through mcpcall.AskHuman: whoever
// answers the agent answers the inner tool.
func Agent(ctx workflow.Context, in Input) (Output, error) {
	steps := plan(in)
	total := int64(len(steps) + 1)
	names, err := workflows.Step(ctx, "list_tools", func(ctx workflow.Context) ([]string, error) {
		if err := workflows.ReportProgress(ctx, 0, total); err != nil {
			return nil, err
		}
		tools, err := mcpcall.ListTools(ctx, Server)
		var names []string
		for _, t := range tools {
			names = append(names, t.Name)
		}
		return names, err
	})
	if err != nil {
		return Output{}, err
	}
	for _, c := range steps {
		if !slices.Contains(names, c.tool) {
			return Output{}, workflows.Fail("tool_missing", fmt.Sprintf("the server lists no tool %q", c.tool))
		}
	}
	out := Output{Tools: names}
	for i, c := range steps {
		text, err := workflows.Step(ctx, c.tool, func(ctx workflow.Context) (string, error) {
			if err := workflows.ReportProgress(ctx, int64(i+1), total); err != nil {
				return "", err
			}
			res, err := mcpcall.CallTool(ctx, Server, c.tool, c.args, nil)
			if err != nil {
				return "", err
			}
			if res.IsError {
				return "", workflows.Fail("tool_failed", fmt.Sprintf("%s failed: %s", c.tool, textOf(res)))
			}
			return textOf(res), nil
		})
		if err != nil {
			return Output{}, err
		}
		out.Calls = append(out.Calls, Called{Tool: c.tool, Result: text})
	}
	return out, nil
}

// textOf joins the text blocks of a result.
func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// compile-time check: the agent's result has its own text.
var _ workflows.ResultTexter = Output{}
