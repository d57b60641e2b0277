package tools_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

func TestDefaultRegistry(t *testing.T) {
	acts := tools.NewActivities(nil, tools.ActivityOptions{})
	plain, err := tools.DefaultRegistry(acts, false)
	if err != nil {
		t.Fatal(err)
	}
	full, err := tools.DefaultRegistry(acts, true)
	if err != nil {
		t.Fatal(err)
	}
	names := func(specs []signals.ToolSpec) []string {
		var out []string
		for _, s := range specs {
			out = append(out, s.Name)
		}
		return out
	}
	if got := names(plain.Specs()); !slices.Equal(got, []string{"delay", "publish_report"}) {
		t.Errorf("default tools = %v", got)
	}
	wantFixtures := []string{"confirm_delete", "conformance-approval", "conformance-approval-approvers",
		"conformance-cancellable", "conformance-delay", "conformance-failure", "failing_job", "greet",
		"multi_input", "protocol_error_job", "slow_compute", "test_tool_with_task"}
	var fixtures []string
	for _, s := range tools.FixtureTools() {
		fixtures = append(fixtures, s.Spec().Name)
	}
	slices.Sort(fixtures)
	if !slices.Equal(fixtures, wantFixtures) {
		t.Errorf("fixtures = %v, want %v", fixtures, wantFixtures)
	}
	got := names(full.Specs())
	for _, f := range wantFixtures {
		if !slices.Contains(got, f) {
			t.Errorf("fixture %s missing from the full registry", f)
		}
	}
	if !slices.IsSorted(got) || len(got) != len(wantFixtures)+2 {
		t.Errorf("specs not sorted or incomplete: %v", got)
	}
	for _, s := range full.Specs() {
		if s.Description == "" || !json.Valid(s.InputSchema) {
			t.Errorf("%s: description %q, schema %s", s.Name, s.Description, s.InputSchema)
		}
	}
}

func TestToolSpecs(t *testing.T) {
	reg, err := tools.DefaultRegistry(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool        string
		taskSupport signals.TaskSupport
		canSuspend  bool
		valid       []string
		invalid     []string
	}{
		{"greet", signals.TaskForbidden, false, []string{`{"name":"Alice"}`}, []string{`{}`, `{"name":5}`, `{"name":"a","x":1}`}},
		{"slow_compute", signals.TaskOptional, false, []string{`{"seconds":0,"label":"x"}`, `{"seconds":60}`}, []string{`{"label":"x"}`, `{"seconds":-1}`, `{"seconds":1.5}`}},
		{"failing_job", signals.TaskRequired, false, []string{`{}`}, nil},
		{"protocol_error_job", signals.TaskRequired, false, []string{`{}`}, nil},
		{"confirm_delete", signals.TaskOptional, true, []string{`{"filename":"a.txt"}`}, []string{`{}`}},
		{"multi_input", signals.TaskOptional, true, []string{`{}`}, nil},
		{"conformance-approval", signals.TaskOptional, true, []string{`{}`}, nil},
		{"conformance-failure", signals.TaskOptional, false, []string{`{}`}, nil},
		{"conformance-delay", signals.TaskOptional, false, []string{`{"delayMs":0}`, `{"delayMs":30000}`}, []string{`{}`, `{"delayMs":30001}`, `{"delayMs":-1}`}},
		{"conformance-cancellable", signals.TaskOptional, false, []string{`{}`, `{"delayMs":1}`, `{"delayMs":60000}`}, []string{`{"delayMs":0}`, `{"delayMs":60001}`}},
		{"publish_report", signals.TaskOptional, true, []string{`{"title":"t","topic":"x"}`, `{"title":"t","topic":"x","sections":2,"approvers":["bob"]}`}, []string{`{"title":"t"}`}},
		{"delay", signals.TaskOptional, false, []string{`{"delayMs":10}`}, []string{`{}`, `{"delayMs":-5}`}},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			spec, ok := reg.Lookup(tc.tool)
			if !ok {
				t.Fatalf("%s not found", tc.tool)
			}
			if spec.TaskSupport != tc.taskSupport || spec.CanSuspend != tc.canSuspend {
				t.Errorf("taskSupport %s canSuspend %v, want %s %v", spec.TaskSupport, spec.CanSuspend, tc.taskSupport, tc.canSuspend)
			}
			var s jsonschema.Schema
			if err := json.Unmarshal(spec.InputSchema, &s); err != nil {
				t.Fatal(err)
			}
			rs, err := s.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tc.valid {
				var inst any
				_ = json.Unmarshal([]byte(v), &inst)
				if err := rs.Validate(inst); err != nil {
					t.Errorf("%s rejected: %v", v, err)
				}
			}
			for _, v := range tc.invalid {
				var inst any
				_ = json.Unmarshal([]byte(v), &inst)
				if err := rs.Validate(inst); err == nil {
					t.Errorf("%s accepted", v)
				}
			}
		})
	}
	if _, ok := reg.Lookup("nope"); ok {
		t.Error("Lookup of an unknown tool succeeded")
	}
	spec, _ := reg.Lookup("test_tool_with_task")
	if len(spec.PreRunInputs) != 1 || spec.PreRunInputs[0].Key != "user_name" || !strings.Contains(string(spec.PreRunInputs[0].Schema), `"required":["name"]`) {
		t.Errorf("pre-run inputs = %+v", spec.PreRunInputs)
	}
	spec, _ = reg.Lookup("conformance-cancellable")
	if !strings.Contains(string(spec.InputSchema), `"default":30000`) {
		t.Errorf("cancellable schema has no default: %s", spec.InputSchema)
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
			checkLog(t, res.Events)
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
		{"slow compute", tools.SlowComputeOutput{Label: "x", Seconds: 1},
			`{"label":"x","seconds":1}`, `Computed "x" in 1 second(s).`},
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
