package conformancetools

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// ListedApprover is the only eligible approver of the
// conformance-approval-approvers fixture.
const ListedApprover = "urn:conformance:listed-approver"

// Registry returns the registry the stock commands serve with
// OPENWOP_FIXTURES=on: the example tools of package examples/tools and the
// conformance fixtures, with acts as their activities (nil: a registry used
// only for its specs). The fixtures run the examples' Sleep activity.
func Registry(acts *tools.Activities) (*workflows.Registry, error) {
	all := append(tools.ExampleTools(), Tools()...)
	if acts == nil {
		return workflows.NewRegistry(all)
	}
	return workflows.NewRegistry(all, acts)
}

// taskAtOnce turns the inline wait off (workflows.WithInlineWait): the
// suites' scenarios expect a call that takes a task to be answered with
// the task, however short its run.
func taskAtOnce() workflows.ToolOption { return workflows.WithInlineWait(0) }

// Tools returns the conformance fixtures: the tools the MCP conformance
// suite's tasks scenarios call and the OpenWOP conformance fixture
// workflows.
func Tools() []workflows.Tool {
	return []workflows.Tool{
		workflows.NewTool("greet", "Say hello to someone (synchronous only).",
			Greet, workflows.WithTaskSupport(signals.TaskForbidden), taskAtOnce()),
		workflows.NewTool("slow_compute", "Compute for the given number of seconds; may run as a task.",
			SlowCompute, workflows.WithRange("seconds", 0, 3600), taskAtOnce()),
		workflows.NewTool("failing_job", "A task that fails with a tool error after about one second.",
			FailingJob, workflows.WithTaskSupport(signals.TaskRequired), taskAtOnce()),
		workflows.NewTool("protocol_error_job", "A task that ends with a JSON-RPC error after about one second.",
			ProtocolErrorJob, workflows.WithTaskSupport(signals.TaskRequired), taskAtOnce()),
		workflows.NewTool("confirm_delete", "Ask for confirmation before deleting a file (nothing is really deleted).",
			ConfirmDelete, workflows.Suspends(), taskAtOnce()),
		workflows.NewTool("multi_input", "Ask two questions at once and answer when both are answered.",
			MultiInput, workflows.Suspends(), taskAtOnce()),
		workflows.NewTool("test_tool_with_task", "Greet the user whose name is asked before the task starts.",
			GreetPreRun, workflows.WithPreRunInput(PreRunUserName, "What is your name?",
				json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"your name"}},"required":["name"]}`)), taskAtOnce()),
		workflows.NewTool("conformance-approval", "OpenWOP conformance fixture: an approval gate (accept completes, reject takes the decline path).",
			ConformanceApproval, workflows.Suspends(), taskAtOnce()),
		workflows.NewTool("conformance-approval-approvers", "OpenWOP conformance fixture: an approval gate only "+ListedApprover+" may resolve.",
			ConformanceApprovalApprovers, workflows.Suspends(), taskAtOnce()),
		workflows.NewTool("conformance-failure", "OpenWOP conformance fixture: fails with code conformance_test_failure.",
			ConformanceFailure, taskAtOnce()),
		workflows.NewTool("conformance-delay", "OpenWOP conformance fixture: waits delayMs milliseconds, then completes.",
			ConformanceDelay, workflows.WithRange("delayMs", 0, 30000), taskAtOnce()),
		workflows.NewTool("conformance-cancellable", "OpenWOP conformance fixture: waits delayMs milliseconds (default 30000) and can be cancelled.",
			ConformanceCancellable, workflows.WithRange("delayMs", 1, 60000), workflows.WithDefault("delayMs", 30000), taskAtOnce()),
	}
}

// NoInput is the input of tools that take no arguments.
type NoInput struct{}

// GreetInput is the input of greet.
type GreetInput struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

// Greet returns "Hello, <name>!".
func Greet(_ workflow.Context, in GreetInput) (string, error) {
	return "Hello, " + in.Name + "!", nil
}

// SlowComputeInput is the input of slow_compute.
type SlowComputeInput struct {
	Seconds int    `json:"seconds" jsonschema:"how many seconds the computation takes"`
	Label   string `json:"label,omitempty" jsonschema:"a label echoed in the result"`
}

// SlowComputeOutput is the output of slow_compute.
type SlowComputeOutput struct {
	Label   string `json:"label"`
	Seconds int    `json:"seconds"`
}

// ResultText implements ResultTexter.
func (o SlowComputeOutput) ResultText() string {
	return fmt.Sprintf("Computed %q in %d second(s).", o.Label, o.Seconds)
}

// SlowCompute sleeps in a heartbeating activity, so a cancellation stops it.
func SlowCompute(ctx workflow.Context, in SlowComputeInput) (SlowComputeOutput, error) {
	if in.Seconds > 0 {
		if _, err := tools.SleepStep(ctx, "compute", int64(in.Seconds)*1000); err != nil {
			return SlowComputeOutput{}, err
		}
	}
	return SlowComputeOutput{Label: in.Label, Seconds: in.Seconds}, nil
}

// FailingJob fails with a tool error after one second.
func FailingJob(ctx workflow.Context, _ NoInput) (string, error) {
	if err := workflow.Sleep(ctx, time.Second); err != nil {
		return "", err
	}
	return "", workflows.Fail("job_failed", "failing_job failed on purpose")
}

// ProtocolErrorJob ends with a JSON-RPC internal error after one second.
func ProtocolErrorJob(ctx workflow.Context, _ NoInput) (string, error) {
	if err := workflow.Sleep(ctx, time.Second); err != nil {
		return "", err
	}
	return "", workflows.ProtocolError(-32603, "protocol_error_job raised a JSON-RPC error on purpose")
}

// ConfirmDeleteInput is the input of confirm_delete.
type ConfirmDeleteInput struct {
	Filename string `json:"filename" jsonschema:"the file to delete"`
}

// Confirmation is the answer confirm_delete asks for.
type Confirmation struct {
	Confirm bool `json:"confirm" jsonschema:"delete the file?"`
}

// ConfirmDelete asks one question and completes once it is answered. It
// logs who confirmed (AskAsFrom tells the authenticated subject whose
// answer was accepted).
func ConfirmDelete(ctx workflow.Context, in ConfirmDeleteInput) (string, error) {
	c, err := workflows.AskAsFrom[Confirmation](ctx, workflows.InputRequest{
		Key:   "confirm",
		Title: fmt.Sprintf("Delete %s?", in.Filename),
	})
	switch {
	case errors.Is(err, workflows.ErrDeclined):
		return fmt.Sprintf("Kept %s: the deletion was declined.", in.Filename), nil
	case err != nil:
		return "", err
	case !c.Value.Confirm:
		return fmt.Sprintf("Kept %s: the deletion was not confirmed.", in.Filename), nil
	}
	workflow.GetLogger(ctx).Info("deletion confirmed", "by", c.By.SubjectID, "tenant", c.By.Tenant)
	return fmt.Sprintf("Deleted %s.", in.Filename), nil
}

// MultiInput asks two questions at once. The colour is optional: the MCP
// conformance suite answers both questions with the same content, which
// names no colour.
func MultiInput(ctx workflow.Context, _ NoInput) (string, error) {
	answers, err := workflows.AskInputs(ctx,
		workflows.InputRequest{Key: "name", Title: "What is your name?",
			Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"your name"}},"required":["name"]}`)},
		workflows.InputRequest{Key: "color", Title: "What is your favourite colour?",
			Schema: json.RawMessage(`{"type":"object","properties":{"color":{"type":"string","description":"a colour"}}}`)},
	)
	if err != nil {
		return "", err
	}
	name := field(answers[0], "name")
	color := field(answers[1], "color")
	return fmt.Sprintf("Hello %s, your favourite colour is %s.", name, color), nil
}

// field returns the string property prop of an answer, or "(declined)" /
// "(unknown)".
func field(a workflows.Answer, prop string) string {
	if a.Declined {
		return "(declined)"
	}
	var m map[string]any
	if json.Unmarshal(a.Content, &m) == nil {
		if s, ok := m[prop].(string); ok {
			return s
		}
	}
	return "(unknown)"
}

// PreRunUserName is the key of test_tool_with_task's pre-run question.
const PreRunUserName = "user_name"

// GreetPreRun greets the user named in the pre-run input user_name. It waits a
// second first, so that the run is a task when the mount answers.
func GreetPreRun(ctx workflow.Context, _ NoInput) (string, error) {
	raw, ok := workflows.PreRunInput(ctx, PreRunUserName)
	if !ok {
		return "", workflows.Fail("missing_input", "the pre-run input user_name was not answered")
	}
	var who struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &who); err != nil || who.Name == "" {
		return "", workflows.Fail("invalid_input", "the pre-run input user_name has no name")
	}
	if err := workflow.Sleep(ctx, time.Second); err != nil {
		return "", err
	}
	return "Hello, " + who.Name + "!", nil
}

// ApprovalOutcome is the output of the approval fixtures.
type ApprovalOutcome struct {
	Approved bool   `json:"approved"`
	Decision string `json:"decision"`
}

// ConformanceApproval is an approval gate (node "gate"). Accept completes the
// run approved; reject (or a decline) takes the decline path, which also
// completes, with approved=false.
func ConformanceApproval(ctx workflow.Context, _ NoInput) (ApprovalOutcome, error) {
	return approvalGate(ctx, nil)
}

// ConformanceApprovalApprovers is ConformanceApproval whose only eligible
// approver is ListedApprover.
func ConformanceApprovalApprovers(ctx workflow.Context, _ NoInput) (ApprovalOutcome, error) {
	return approvalGate(ctx, []string{ListedApprover})
}

func approvalGate(ctx workflow.Context, approvers []string) (ApprovalOutcome, error) {
	d, err := workflows.Approve(ctx, workflows.ApprovalRequest{
		Key:         "gate",
		NodeID:      "gate",
		Title:       "Approve the conformance run?",
		Description: "Accept to complete the run, reject to take the decline path.",
		Actions:     []string{workflows.ApprovalAccept, workflows.ApprovalReject},
		Approvers:   approvers,
	})
	if err != nil {
		return ApprovalOutcome{}, err
	}
	return ApprovalOutcome{Approved: d.Approved, Decision: d.Action}, nil
}

// ConformanceFailure fails at node "fail" with code conformance_test_failure.
func ConformanceFailure(_ workflow.Context, _ NoInput) (string, error) {
	return "", workflows.FailAt("fail", "conformance_test_failure", "Intentional conformance failure")
}

// DelayMsInput is the input of conformance-delay.
type DelayMsInput struct {
	DelayMs int64 `json:"delayMs" jsonschema:"how long to wait, in milliseconds"`
}

// DelayedOutput is the output of the delay fixtures.
type DelayedOutput struct {
	DelayedMs int64 `json:"delayedMs"`
}

// ConformanceDelay waits on a workflow timer (node "delay"); the run reads
// running meanwhile.
func ConformanceDelay(ctx workflow.Context, in DelayMsInput) (DelayedOutput, error) {
	_, err := workflows.Step(ctx, "delay", func(ctx workflow.Context) (struct{}, error) {
		return struct{}{}, workflow.Sleep(ctx, time.Duration(in.DelayMs)*time.Millisecond)
	})
	return DelayedOutput{DelayedMs: in.DelayMs}, err
}

// CancellableInput is the input of conformance-cancellable.
type CancellableInput struct {
	DelayMs int64 `json:"delayMs,omitempty" jsonschema:"how long to wait, in milliseconds (default 30000)"`
}

// ConformanceCancellable waits in a heartbeating activity (node "delay"),
// so that a cancellation stops it within seconds.
func ConformanceCancellable(ctx workflow.Context, in CancellableInput) (DelayedOutput, error) {
	in.DelayMs = cmp.Or(in.DelayMs, 30000)
	slept, err := tools.SleepStep(ctx, "delay", in.DelayMs)
	return DelayedOutput{DelayedMs: slept}, err
}
