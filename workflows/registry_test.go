package workflows

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/signals"
)

func TestDefaultRegistry(t *testing.T) {
	acts := activities.New(nil, activities.Options{})
	plain, err := DefaultRegistry(acts, false)
	if err != nil {
		t.Fatal(err)
	}
	full, err := DefaultRegistry(acts, true)
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
	if got := names(plain.Specs()); !equal(got, []string{"delay", "publish_report"}) {
		t.Errorf("default tools = %v", got)
	}
	wantFixtures := []string{"confirm_delete", "conformance-approval", "conformance-approval-approvers",
		"conformance-cancellable", "conformance-delay", "conformance-failure", "failing_job", "greet",
		"multi_input", "protocol_error_job", "slow_compute", "test_tool_with_task"}
	if got := full.Fixtures(); !equal(got, wantFixtures) {
		t.Errorf("fixtures = %v, want %v", got, wantFixtures)
	}
	got := names(full.Specs())
	if !slices.IsSorted(got) || len(got) != len(wantFixtures)+2 {
		t.Errorf("specs not sorted or incomplete: %v", got)
	}
	if len(plain.Fixtures()) != 0 {
		t.Errorf("fixtures listed without the flag: %v", plain.Fixtures())
	}
	for _, s := range full.Specs() {
		if s.Description == "" || !json.Valid(s.InputSchema) {
			t.Errorf("%s: description %q, schema %s", s.Name, s.Description, s.InputSchema)
		}
		if s.Fixture != slices.Contains(wantFixtures, s.Name) {
			t.Errorf("%s: fixture flag %v", s.Name, s.Fixture)
		}
	}
}

func TestToolSpecs(t *testing.T) {
	reg, err := DefaultRegistry(nil, true)
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

func TestNewRegistryRejectsBadTools(t *testing.T) {
	ok := func(workflow.Context, NoInput) (string, error) { return "", nil }
	notStruct := func(workflow.Context, string) (string, error) { return "", nil }
	tests := []struct {
		name  string
		tools []Tool
		want  string
	}{
		{"duplicate", []Tool{NewTool("a", "d", ok), NewTool("a", "d", ok)}, "registered twice"},
		{"bad name", []Tool{NewTool("a/b", "d", ok)}, "does not match"},
		{"no description", []Tool{NewTool("a", "", ok)}, "empty description"},
		{"bad task support", []Tool{NewTool("a", "d", ok, WithTaskSupport("sometimes"))}, "invalid task support"},
		{"input not a struct", []Tool{NewTool("a", "d", notStruct)}, "not a struct"},
		{"range on a missing property", []Tool{NewTool("a", "d", ok, WithRange("x", 0, 1))}, `no input property "x"`},
		{"pre-run input without schema", []Tool{NewTool("a", "d", ok, WithPreRunInput("k", "m", nil))}, "pre-run input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRegistry(tc.tools)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want containing %q", err, tc.want)
			}
		})
	}
}

func TestFlatSchema(t *testing.T) {
	type flat struct {
		Name string `json:"name" jsonschema:"your name"`
		Age  int    `json:"age,omitempty"`
		OK   bool   `json:"ok"`
	}
	raw, err := FlatSchema[flat]()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"age":{"type":"integer"},"name":{"type":"string","description":"your name"},"ok":{"type":"boolean"}},"required":["name","ok"]}`
	if string(raw) != want {
		t.Errorf("schema = %s\nwant     %s", raw, want)
	}
	type nested struct {
		Tags []string `json:"tags"`
	}
	if _, err := FlatSchema[nested](); err == nil {
		t.Error("a slice property was accepted")
	}
}

func TestEncodeOutput(t *testing.T) {
	tests := []struct {
		out     any
		outputs string
		text    string
	}{
		{"hi", `{"result":"hi"}`, "hi"},
		{42, `{"result":42}`, "42"},
		{map[string]int{"a": 1}, `{"a":1}`, `{"a":1}`},
		{SlowComputeOutput{Label: "x", Seconds: 1}, `{"label":"x","seconds":1}`, `Computed "x" in 1 second(s).`},
		{nil, `{"result":null}`, "null"},
	}
	for _, tc := range tests {
		outputs, text, err := encodeOutput(tc.out)
		if err != nil || string(outputs) != tc.outputs || text != tc.text {
			t.Errorf("encodeOutput(%v) = %s, %q, %v; want %s, %q", tc.out, outputs, text, err, tc.outputs, tc.text)
		}
	}
}
