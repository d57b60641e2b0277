package conformancetools_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/signals"
)

func TestRegistry(t *testing.T) {
	reg, err := conformancetools.Registry(nil)
	if err != nil {
		t.Fatal(err)
	}
	wantFixtures := []string{"confirm_delete", "conformance-approval", "conformance-approval-approvers",
		"conformance-cancellable", "conformance-delay", "conformance-failure", "failing_job", "greet",
		"multi_input", "protocol_error_job", "slow_compute", "test_tool_with_task"}
	var fixtures []string
	for _, s := range conformancetools.Tools() {
		fixtures = append(fixtures, s.Spec().Name)
	}
	slices.Sort(fixtures)
	if !slices.Equal(fixtures, wantFixtures) {
		t.Errorf("fixtures = %v, want %v", fixtures, wantFixtures)
	}
	var got []string
	for _, s := range reg.Specs() {
		got = append(got, s.Name)
		if s.Description == "" || !json.Valid(s.InputSchema) {
			t.Errorf("%s: description %q, schema %s", s.Name, s.Description, s.InputSchema)
		}
	}
	want := append(slices.Clone(wantFixtures), "approve_expense", "delay", "publish_report")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("served tools = %v, want %v (sorted)", got, want)
	}
}

func TestToolSpecs(t *testing.T) {
	reg, err := conformancetools.Registry(nil)
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

func TestResultText(t *testing.T) {
	out := conformancetools.SlowComputeOutput{Label: "x", Seconds: 1}
	raw, err := json.Marshal(out)
	if want := `{"label":"x","seconds":1}`; err != nil || string(raw) != want {
		t.Errorf("JSON = %s, %v; want %s", raw, err, want)
	}
	if got, want := out.ResultText(), `Computed "x" in 1 second(s).`; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}
