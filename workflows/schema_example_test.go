package workflows_test

import (
	"encoding/json"
	"fmt"
	"log"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
)

// RefundMethod is the form a refund tool asks while it runs: its schema is
// derived from the struct, and AskAs's SchemaOptions add the rules.
type RefundMethod struct {
	Method string `json:"method" jsonschema:"how the money goes back"`
	Days   int    `json:"days,omitempty" jsonschema:"how many days the refund may take"`
}

// A typed question with an enum, a bound and a default, and no JSON
// Schema written by hand: the agent sees the rules in the form, an answer
// that breaks one is refused before the run sees it (the question stays
// open), and the default fills in a days the answer leaves out.
func ExampleAskAs() {
	askMethod := func(ctx workflow.Context) (RefundMethod, error) {
		return workflows.AskAs[RefundMethod](ctx, workflows.InputRequest{Key: "method", Title: "How should we refund?"},
			workflows.WithEnum("method", "card", "voucher"),
			workflows.WithRange("days", 1, 30), workflows.WithDefault("days", 5))
	}
	_ = askMethod // call it in a tool's workflow function
	// FlatSchema shows the schema AskAs asks with.
	schema, err := workflows.FlatSchema[RefundMethod](workflows.WithEnum("method", "card", "voucher"),
		workflows.WithRange("days", 1, 30), workflows.WithDefault("days", 5))
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println(string(schema))
	// Output:
	// {"type":"object","properties":{"days":{"type":"integer","description":"how many days the refund may take","default":5,"minimum":1,"maximum":30},"method":{"type":"string","description":"how the money goes back","enum":["card","voucher"]}},"required":["method"]}
}

// The same SchemaOptions set the rules of a tool's input: here an enum,
// without a WithSchema callback.
func ExampleWithEnum() {
	type In struct {
		OrderID string `json:"orderId"`
		Speed   string `json:"speed,omitempty" jsonschema:"how fast to refund"`
	}
	refund := func(ctx workflow.Context, in In) (string, error) { return "refunded " + in.OrderID, nil }
	tool := workflows.NewTool("refund", "Refund an order.", refund,
		workflows.WithEnum("speed", "standard", "express"), workflows.WithLength("orderId", 1, 40))
	if err := tool.Err(); err != nil {
		log.Fatalln(err)
	}
	fmt.Println(string(tool.Spec().InputSchema))
	// Output:
	// {"type":"object","properties":{"orderId":{"type":"string","minLength":1,"maxLength":40},"speed":{"type":"string","description":"how fast to refund","enum":["standard","express"]}},"required":["orderId"],"additionalProperties":false}
}

// A question whose field description names what the run asks about: the
// description the field's tag gives is replaced for this one question.
func ExampleWithDescription() {
	type Confirm struct {
		Confirm bool `json:"confirm" jsonschema:"go ahead?"`
	}
	orderID := "A-17" // in a tool, from its input
	schema, err := workflows.FlatSchema[Confirm](workflows.WithDescription("confirm", "refund order "+orderID+"?"))
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println(string(schema))
	// Output:
	// {"type":"object","properties":{"confirm":{"type":"boolean","description":"refund order A-17?"}},"required":["confirm"]}
}

// A tool whose arguments are described elsewhere (here a schema written
// by hand; the tools of an upstream MCP server get theirs from its
// tools/list) takes them as they came, as json.RawMessage.
func ExampleWithInputSchema() {
	schema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)
	search := workflows.NewTool("search", "Search the archive.",
		func(ctx workflow.Context, args json.RawMessage) (string, error) {
			return "searched with " + string(args), nil
		}, workflows.WithInputSchema(schema))
	if err := search.Err(); err != nil {
		log.Fatalln(err)
	}
	fmt.Println(string(search.Spec().InputSchema))
	// Output:
	// {"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}
}
