package workflowstest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// batchForm is a typed question: its rules are SchemaOptions, not a
// hand-written JSON Schema.
type batchForm struct {
	Mode      string `json:"mode,omitempty" jsonschema:"how to run the batch"`
	BatchSize int    `json:"batchSize" jsonschema:"items per batch"`
	Label     string `json:"label,omitempty" jsonschema:"a label for the batch"`
}

// askBatch asks the batch form and returns the answer it decoded.
func askBatch(ctx workflow.Context, _ struct{}) (batchForm, error) {
	return workflows.AskAs[batchForm](ctx, workflows.InputRequest{Key: "batch", Title: "How should the batch run?"},
		workflows.WithEnum("mode", "fast", "safe"), workflows.WithDefault("mode", "safe"),
		workflows.WithRange("batchSize", 1, 1000), workflows.WithLength("label", 1, 20))
}

// TestTypedQuestionRules: the rules the SchemaOptions give AskAs are in
// the question the agent sees and are what its answers are checked
// against: an answer outside the enum, a bound or a length is refused with
// a sentence about the field, the question stays open (the run applies
// only the corrected answer), and a default fills in what the answer
// leaves out.
func TestTypedQuestionRules(t *testing.T) {
	reg, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("batch", "Run a batch the way a person says.", askBatch, workflows.Suspends()),
	})
	if err != nil {
		t.Fatal(err)
	}
	script := []struct {
		answer map[string]any
		refuse string // what the refusal says; empty for the answer taken
	}{
		{map[string]any{"mode": "reckless", "batchSize": 10}, "mode: reckless is not one of the values its enum allows: fast safe"},
		{map[string]any{"batchSize": 5000}, "batchSize: 5000 is more than the maximum 1000"},
		{map[string]any{"batchSize": 0}, "batchSize: 0 is less than the minimum 1"},
		{map[string]any{"batchSize": 10, "label": strings.Repeat("x", 21)}, "label: " + `"` + strings.Repeat("x", 21) + `" is 21 characters long, longer than the maximum length 20`},
		{map[string]any{"batchSize": 10, "label": "nightly"}, ""},
	}
	env := workflowstest.New(reg)
	env.AnswerFunc("batch", func(q workflowstest.Question) workflowstest.Answer {
		return workflowstest.Accept(script[len(q.Refusals)].answer)
	})
	res, err := env.Call("batch", struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Questions) != 1 {
		t.Fatalf("questions = %+v, want the one form", res.Questions)
	}
	q := res.Questions[0]
	var seen struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(q.RequestedSchema, &seen); err != nil {
		t.Fatal(err)
	}
	mode, size, label := seen.Properties["mode"], seen.Properties["batchSize"], seen.Properties["label"]
	if !equalJSON(mode["enum"], []any{"fast", "safe"}) || mode["default"] != "safe" ||
		size["minimum"] != 1.0 || size["maximum"] != 1000.0 || label["minLength"] != 1.0 || label["maxLength"] != 20.0 {
		t.Errorf("the agent sees the form %s, want its enum, default, bounds and lengths", q.RequestedSchema)
	}
	if len(q.Refusals) != len(script)-1 {
		t.Fatalf("refusals = %v, want %d", q.Refusals, len(script)-1)
	}
	for i, r := range q.Refusals {
		if !strings.Contains(r.Error(), script[i].refuse) {
			t.Errorf("refusal %d = %q, want it to say %q", i, r, script[i].refuse)
		}
	}
	if n := len(res.Snapshot.Resolved); n != 1 || res.Status() != signals.StatusCompleted {
		t.Fatalf("status %s with %d answers applied, want completed with only the corrected one", res.Status(), n)
	}
	var out batchForm
	if err := res.Output(&out); err != nil {
		t.Fatal(err)
	}
	if want := (batchForm{Mode: "safe", BatchSize: 10, Label: "nightly"}); out != want {
		t.Errorf("decoded answer = %+v, want %+v (mode from its default)", out, want)
	}
}

// equalJSON reports whether a and b encode to the same JSON.
func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
