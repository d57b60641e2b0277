package mcpmount

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/workflows"
)

// batchInput is the input of the typed tool: its enum and bound come from
// SchemaOptions given to NewTool.
type batchInput struct {
	Items int    `json:"items" jsonschema:"how many items"`
	Mode  string `json:"mode,omitempty" jsonschema:"how to run"`
}

// batchForm is the typed question the tool asks: its enum and bound come
// from the same SchemaOptions, given to AskAs.
type batchForm struct {
	Mode      string `json:"mode" jsonschema:"how to run the batch"`
	BatchSize int    `json:"batchSize" jsonschema:"items per batch"`
}

// typedBatch asks how to run the batch, in a typed question.
func typedBatch(ctx workflow.Context, in batchInput) (string, error) {
	f, err := workflows.AskAs[batchForm](ctx, workflows.InputRequest{Key: "batch", Title: "How should the batch run?"},
		workflows.WithEnum("mode", "fast", "safe"), workflows.WithRange("batchSize", 1, 1000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d items in batches of %d, %s.", in.Items, f.BatchSize, f.Mode), nil
}

// TestTypedQuestionOnTheWire: a tool whose input and question take their
// enum and bounds from SchemaOptions (no hand-written JSON Schema), served
// by a worker on the embedded Temporal server. On the wire, tools/call
// refuses arguments outside the input's enum or bound; the question's form
// in tasks/get carries its enum and bounds; tasks/update refuses an answer
// outside them with a sentence naming the field, the question stays open
// and the run never sees the answer; the answer that fits completes the
// run with what it chose.
func TestTypedQuestionOnTheWire(t *testing.T) {
	reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("typed_batch", "Run a batch the way a person says.", typedBatch,
		workflows.Suspends(), workflows.WithRange("items", 1, 100), workflows.WithEnum("mode", "fast", "safe"), workflows.WithInlineWait(0))})
	if err != nil {
		t.Fatal(err)
	}
	base, err := conformancetools.Registry(nil)
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	typed := reg.Publication(tq, "typed-worker").Tools
	s := newStackWith(t, nil, "", func(o *Options) func(*Mount) {
		o.Catalog = staticCatalog(t, slices.Concat(base.Specs(), typed)...)
		return nil
	})
	s.env.NewWorker(t, tq, reg.Register)
	c := s.client(t, "", tasksCaps())

	for _, bad := range []struct {
		args map[string]any
		rule string
	}{
		{map[string]any{"items": 500}, "items: 500 is more than the maximum 100"},
		{map[string]any{"items": 5, "mode": "reckless"}, "mode: reckless is not one of the values its enum allows"},
	} {
		// Arguments outside the input schema are a tool error (isError).
		r := callTool(t, c, "typed_batch", bad.args)
		if r["isError"] != true || !strings.Contains(text(t, r), bad.rule) {
			t.Fatalf("tools/call with %v = %v, want a tool error saying %q", bad.args, r, bad.rule)
		}
	}

	id := callTool(t, c, "typed_batch", map[string]any{"items": 50})["taskId"].(string)
	res := waitTask(t, c, id, status("input_required"))
	var key string
	var props map[string]any
	for k, v := range res["inputRequests"].(map[string]any) {
		key = k
		schema := v.(map[string]any)["params"].(map[string]any)["requestedSchema"].(map[string]any)
		props = schema["properties"].(map[string]any)
	}
	mode, size := props["mode"].(map[string]any), props["batchSize"].(map[string]any)
	if fmt.Sprint(mode["enum"]) != "[fast safe]" || size["minimum"] != 1.0 || size["maximum"] != 1000.0 {
		t.Fatalf("the form the agent sees = %v, want the enum and bounds", props)
	}
	for _, bad := range []struct {
		content map[string]any
		rule    string
	}{
		{map[string]any{"mode": "reckless", "batchSize": 10}, "mode: reckless is not one of the values its enum allows"},
		{map[string]any{"mode": "fast", "batchSize": 5000}, "batchSize: 5000 is more than the maximum 1000"},
		{map[string]any{"mode": "fast", "batchSize": 0}, "batchSize: 0 is less than the minimum 1"},
	} {
		wantRefusal(t, c.call("tasks/update", map[string]any{"taskId": id,
			"inputResponses": map[string]any{key: accept(bad.content)}}, nil), key, bad.rule)
		wantUnanswered(t, s, auth.Anonymous(), runOf(t, id), key)
	}
	wantResult(t, c.call("tasks/update", map[string]any{"taskId": id,
		"inputResponses": map[string]any{key: accept(map[string]any{"mode": "safe", "batchSize": 20})}}, nil))
	done := waitTask(t, c, id, status("completed"))
	if got := resultOf(t, done["result"]); !strings.Contains(got, "50 items in batches of 20, safe.") {
		t.Fatalf("result %q, want the chosen batch", got)
	}
}
