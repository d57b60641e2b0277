package tools_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

func TestDefaultRegistry(t *testing.T) {
	reg, err := tools.DefaultRegistry(tools.NewActivities(nil, tools.ActivityOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range reg.Specs() {
		names = append(names, s.Name)
		if s.Description == "" || !json.Valid(s.InputSchema) {
			t.Errorf("%s: description %q, schema %s", s.Name, s.Description, s.InputSchema)
		}
	}
	if !slices.Equal(names, []string{"approve_expense", "delay", "publish_report"}) {
		t.Errorf("default tools = %v", names)
	}
}

func TestPublishReport(t *testing.T) {
	for _, approve := range []bool{true, false} {
		name := map[bool]string{true: "approved", false: "rejected"}[approve]
		t.Run(name, func(t *testing.T) {
			env := newEnv(t)
			var s signals.Snapshot
			env.AnswerFunc("review", func(workflowstest.Question) workflowstest.Answer {
				s, _ = env.Snapshot()
				return workflowstest.Choose(map[bool]string{true: "accept", false: "reject"}[approve])
			})
			res, err := env.Call("publish_report", tools.PublishReportInput{Title: "Q3", Topic: "sales", Sections: 2})
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != signals.StatusWaitingApproval || s.CurrentNodeID() != "review" {
				t.Fatalf("suspended snapshot = %+v", s)
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			testsupport.CheckEventLog(t, testRunID, res.Events)
			var out tools.PublishReportOutput
			if err := json.Unmarshal(res.Snapshot.Outputs, &out); err != nil {
				t.Fatal(err)
			}
			if out.Published != approve || out.ReportID == "" || (approve && !strings.HasPrefix(out.Location, "memory://")) {
				t.Errorf("outputs = %+v", out)
			}
			if approve && out.ApprovedBy != "alice" {
				t.Errorf("approved by %q", out.ApprovedBy)
			}
		})
	}
}

func TestResultText(t *testing.T) {
	tests := []struct {
		name    string
		out     workflows.ResultTexter
		outputs string // the JSON the run's outputs hold
		text    string
	}{
		{"report published", tools.PublishReportOutput{ReportID: "r1", Published: true, Location: "memory://reports/r1", Decision: "accept", ApprovedBy: "alice", Summary: "s"},
			`{"reportId":"r1","published":true,"location":"memory://reports/r1","decision":"accept","approvedBy":"alice","summary":"s"}`,
			"Report r1 published at memory://reports/r1 (approved by alice)."},
		{"report rejected", tools.PublishReportOutput{ReportID: "r1", Decision: "reject", Summary: "s"},
			`{"reportId":"r1","published":false,"decision":"reject","summary":"s"}`,
			`Report r1 was not published: the reviewer chose "reject".`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.out)
			if err != nil || string(raw) != tc.outputs {
				t.Errorf("JSON = %s, %v; want %s", raw, err, tc.outputs)
			}
			if got := tc.out.ResultText(); got != tc.text {
				t.Errorf("text = %q, want %q", got, tc.text)
			}
		})
	}
}
