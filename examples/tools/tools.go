package tools

import (
	"cmp"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
)

// DefaultRegistry returns the registry of the example tools with acts as
// their activities. The server and the worker build the same registry with
// it; acts may be nil for a registry used only for its specs (tools/list).
func DefaultRegistry(acts *Activities) (*workflows.Registry, error) {
	if acts == nil {
		return workflows.NewRegistry(ExampleTools())
	}
	return workflows.NewRegistry(ExampleTools(), acts)
}

// ExampleTools returns the tools a user sees: publish_report, delay and
// approve_expense.
func ExampleTools() []workflows.Tool {
	return []workflows.Tool{
		// publish_report writes a new report (to OutputDir or memory) and
		// overwrites nothing but a retry of its own; each call publishes
		// another report; it reaches nothing outside this process.
		workflows.NewTool("publish_report",
			"Generate a report on a topic, ask a human to approve it, and publish it once approved.",
			PublishReport, workflows.Suspends(), workflows.WithTitle("Publish a report"),
			workflows.WithDestructiveHint(false), workflows.WithOpenWorldHint(false)),
		// delay only waits.
		workflows.NewTool("delay",
			"Wait for the given number of milliseconds (a long-running activity that can be cancelled).",
			Delay, workflows.WithRange("delayMs", 0, 3_600_000), workflows.WithTitle("Wait"),
			workflows.WithReadOnlyHint(), workflows.WithOpenWorldHint(false)),
		// approve_expense books an expense (in this process) once approved.
		workflows.NewTool("approve_expense",
			"Ask a manager to approve an expense, a director instead when no manager answers in time, and book it once approved.",
			ApproveExpense, workflows.Suspends(), workflows.WithTitle("Approve an expense"),
			workflows.WithRange("amount", 0.01, 1_000_000), workflows.WithLength("purpose", 1, 200),
			workflows.WithRange("escalateAfterSeconds", 1, 30*86400),
			workflows.WithDestructiveHint(false), workflows.WithOpenWorldHint(false)),
	}
}

// PublishReportInput is the input of publish_report.
type PublishReportInput struct {
	Title    string `json:"title" jsonschema:"title of the report"`
	Topic    string `json:"topic" jsonschema:"what the report is about"`
	Sections int    `json:"sections,omitempty" jsonschema:"number of sections (1-10, default 3)"`
	// Approvers, when set, lists the principals who may approve publication.
	Approvers []string `json:"approvers,omitempty" jsonschema:"principals allowed to approve (default: anyone of the tenant)"`
}

// PublishReportOutput is the output of publish_report.
type PublishReportOutput struct {
	ReportID   string `json:"reportId"`
	Published  bool   `json:"published"`
	Location   string `json:"location,omitempty"`
	Decision   string `json:"decision"`
	ApprovedBy string `json:"approvedBy,omitempty"`
	Summary    string `json:"summary"`
}

// ResultText implements ResultTexter.
func (o PublishReportOutput) ResultText() string {
	if o.Published {
		return fmt.Sprintf("Report %s published at %s (approved by %s).", o.ReportID, o.Location, o.ApprovedBy)
	}
	return fmt.Sprintf("Report %s was not published: the reviewer chose %q.", o.ReportID, o.Decision)
}

// PublishReport generates a report (activity), asks for approval and
// publishes the report (activity) when approved. A rejection ends the run
// completed with published=false.
func PublishReport(ctx workflow.Context, in PublishReportInput) (PublishReportOutput, error) {
	var acts *Activities // names the activities; the receiver is never used
	in.Sections = cmp.Or(in.Sections, 3)
	if in.Sections < 1 || in.Sections > 10 {
		return PublishReportOutput{}, workflows.Fail("invalid_sections", "sections must be between 1 and 10")
	}
	rep, err := workflows.Step(ctx, "generate", func(ctx workflow.Context) (Report, error) {
		var rep Report
		err := workflow.ExecuteActivity(ctx, acts.GenerateReport, ReportRequest{
			Title: in.Title, Topic: in.Topic, Sections: in.Sections,
		}).Get(ctx, &rep)
		return rep, err
	})
	if err != nil {
		return PublishReportOutput{}, err
	}
	out := PublishReportOutput{ReportID: rep.ID, Summary: rep.Summary()}
	d, err := workflows.Step(ctx, "review", func(ctx workflow.Context) (workflows.Decision, error) {
		return workflows.Approve(ctx, workflows.ApprovalRequest{
			Key:         "review",
			Title:       fmt.Sprintf("Publish the report %q?", rep.Title),
			Description: rep.Summary(),
			Approvers:   in.Approvers,
		})
	})
	if err != nil {
		return PublishReportOutput{}, err
	}
	out.Decision = d.Action
	if !d.Approved {
		return out, nil
	}
	out.ApprovedBy = d.By.SubjectID
	pub, err := workflows.Step(ctx, "publish", func(ctx workflow.Context) (Publication, error) {
		var pub Publication
		err := workflow.ExecuteActivity(ctx, acts.PublishReport, rep).Get(ctx, &pub)
		return pub, err
	})
	if err != nil {
		return PublishReportOutput{}, err
	}
	out.Published = true
	out.Location = pub.Location
	return out, nil
}

// DelayInput is the input of delay.
type DelayInput struct {
	DelayMs int64 `json:"delayMs" jsonschema:"how long to wait, in milliseconds"`
}

// DelayOutput is the output of delay.
type DelayOutput struct {
	SleptMs int64 `json:"sleptMs"`
}

// Delay sleeps in a heartbeating activity, so that a cancellation stops it.
func Delay(ctx workflow.Context, in DelayInput) (DelayOutput, error) {
	slept, err := SleepStep(ctx, "delay", in.DelayMs)
	return DelayOutput{SleptMs: slept}, err
}

// SleepStep runs the Sleep activity for ms milliseconds as the step nodeID
// and returns how long it slept. A tool that waits in an activity it can
// cancel (delay, and the conformance fixtures of
// internal/testing/conformancetools) runs it.
func SleepStep(ctx workflow.Context, nodeID string, ms int64) (int64, error) {
	var acts *Activities // names the activity; the receiver is never used
	return workflows.Step(ctx, nodeID, func(ctx workflow.Context) (int64, error) {
		var res SleepResult
		// The activity may take the whole delay; bound it with some slack.
		// Sleep heartbeats, so it opts into a heartbeat timeout: the SDK
		// then sends its heartbeats every 2.4 s (80% of it) instead of every
		// 30 s, so a cancellation reaches it within about that, and an
		// attempt whose worker died is retried after 3 s (resuming from its
		// last heartbeat).
		opts := workflow.GetActivityOptions(ctx)
		opts.StartToCloseTimeout = time.Duration(ms)*time.Millisecond + time.Minute
		opts.HeartbeatTimeout = 3 * time.Second
		ctx = workflow.WithActivityOptions(ctx, opts)
		err := workflow.ExecuteActivity(ctx, acts.Sleep, SleepInput{Millis: ms}).Get(ctx, &res)
		return res.SleptMillis, err
	})
}

// compile-time check: publish_report has its own result text.
var _ workflows.ResultTexter = PublishReportOutput{}
