package workflows_test

import (
	"context"
	"fmt"
	"log"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
)

// RefundInput is the input of the README's refund tool.
type RefundInput struct {
	OrderID     string `json:"orderId" jsonschema:"the order to refund"`
	AmountCents int64  `json:"amountCents" jsonschema:"amount to refund, in cents"`
	Reason      string `json:"reason,omitempty" jsonschema:"why the customer wants a refund"`
}

// RefundOutput is the output of the README's refund tool.
type RefundOutput struct {
	OrderID  string `json:"orderId"`
	Refunded bool   `json:"refunded"`
	RefundID string `json:"refundId,omitempty"`
	Decision string `json:"decision"`
}

// Refund asks a human, then issues the refund in an activity.
func Refund(ctx workflow.Context, in RefundInput) (RefundOutput, error) {
	out := RefundOutput{OrderID: in.OrderID}
	d, err := workflows.Approve(ctx, workflows.ApprovalRequest{
		Key:   "approve-refund",
		Title: fmt.Sprintf("Refund %d.%02d for order %s?", in.AmountCents/100, in.AmountCents%100, in.OrderID),
	})
	if err != nil {
		return out, err
	}
	out.Decision = d.Action
	if !d.Approved {
		return out, nil
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	err = workflow.ExecuteActivity(ctx, IssueRefund, in).Get(ctx, &out.RefundID)
	out.Refunded = err == nil
	return out, err
}

// IssueRefund is the refund tool's side effect.
func IssueRefund(_ context.Context, in RefundInput) (string, error) {
	return "rf-" + in.OrderID, nil
}

// A tool is a workflow function wrapped with NewTool; its input schema comes
// from the input type.
func ExampleNewTool() {
	tool := workflows.NewTool("refund", "Refund an order after a human approves it.", Refund, workflows.Suspends())
	if err := tool.Err(); err != nil {
		log.Fatalln(err)
	}
	spec := tool.Spec()
	fmt.Println(spec.Name, spec.CanSuspend, spec.TaskSupport)
	fmt.Println(string(spec.InputSchema))
	// Output:
	// refund true optional
	// {"type":"object","properties":{"orderId":{"type":"string","description":"the order to refund"},"amountCents":{"type":"integer","description":"amount to refund, in cents"},"reason":{"type":"string","description":"why the customer wants a refund"}},"required":["orderId","amountCents"],"additionalProperties":false}
}

// A tool that only callers whose OAuth access token grants a scope may
// see and call: tools/list hides it from other tokens, and their calls are
// refused with 403 insufficient_scope naming the scope. API keys are not
// scoped.
func ExampleWithScopes() {
	tool := workflows.NewTool("refund", "Refund an order after a human approves it.", Refund,
		workflows.Suspends(), workflows.WithScopes("refunds:write"))
	if err := tool.Err(); err != nil {
		log.Fatalln(err)
	}
	fmt.Println(tool.Spec().Scopes)
	// Output:
	// [refunds:write]
}

// A worker main: register the tools and activities, publish the tools to
// the catalog, and run until interrupted (the README's main.go).
func ExampleRegistry_Run() {
	c, err := client.Dial(client.Options{}) // localhost:7233
	if err != nil {
		log.Fatalln("connect to Temporal:", err)
	}
	defer c.Close()
	tools, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("refund", "Refund an order after a human approves it.", Refund, workflows.Suspends()),
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

// A worker that is one build of a Temporal Worker Deployment: the refund
// tool's runs stay on the build that started them (pinned, the default),
// so that a later build may change its steps while approvals still wait;
// a tool that keeps no state worth pinning moves to each new current
// version instead. An operator promotes a build with `temporal worker
// deployment set-current-version` (docs/upgrades.md).
func ExampleWithVersioningBehavior() {
	c, err := client.Dial(client.Options{}) // localhost:7233
	if err != nil {
		log.Fatalln("connect to Temporal:", err)
	}
	defer c.Close()
	tools, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("refund", "Refund an order after a human approves it.", Refund, workflows.Suspends()),
		workflows.NewTool("refund_status", "Say whether an order was refunded.", RefundStatus,
			workflows.WithVersioningBehavior(workflow.VersioningBehaviorAutoUpgrade)),
	}, IssueRefund)
	if err != nil {
		log.Fatalln(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := tools.Run(ctx, c, "refunds", workflows.WorkerOptions{
		DeploymentName: "refunds",
		BuildID:        "2026-12-05.1", // the build's tag or commit
	}); err != nil {
		log.Fatalln(err)
	}
}

// RefundStatus reads an order's refund: one quick step, nothing to pin.
func RefundStatus(ctx workflow.Context, in RefundInput) (RefundOutput, error) {
	return RefundOutput{OrderID: in.OrderID}, nil
}

// flags is a ToolSet whose tools an operator switches on and off while
// the worker runs.
type flags struct {
	mu      sync.Mutex
	on      map[string]workflows.Tool
	changed chan struct{}
}

func (f *flags) Tools() []workflows.Tool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Values(f.on))
}

func (f *flags) Changed() <-chan struct{} { return f.changed }

// switchOn serves t from now on.
func (f *flags) switchOn(t workflows.Tool) {
	f.mu.Lock()
	f.on[t.Spec().Name] = t
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// A worker whose tools come and go while it runs: Run publishes the set's
// tools with the registry's, and publishes again each time the set
// changes (the tools of upstream MCP servers are served this way).
func ExampleRegistry_WithToolSet() {
	c, err := client.Dial(client.Options{})
	if err != nil {
		log.Fatalln("connect to Temporal:", err)
	}
	defer c.Close()
	reg, err := workflows.NewRegistry(nil, IssueRefund)
	if err != nil {
		log.Fatalln(err)
	}
	set := &flags{on: map[string]workflows.Tool{}, changed: make(chan struct{}, 1)}
	go func() {
		time.Sleep(time.Minute)
		set.switchOn(workflows.NewTool("refund", "Refund an order after a human approves it.", Refund, workflows.Suspends()))
	}()
	if err := reg.WithToolSet(set).Run(context.Background(), c, "refunds", workflows.WorkerOptions{}); err != nil {
		log.Fatalln(err)
	}
}
