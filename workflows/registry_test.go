package workflows_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
)

func TestNewRegistryRejectsBadTools(t *testing.T) {
	ok := func(workflow.Context, noInput) (string, error) { return "", nil }
	notStruct := func(workflow.Context, string) (string, error) { return "", nil }
	withMode := func(workflow.Context, modeInput) (string, error) { return "", nil }
	raw := func(workflow.Context, json.RawMessage) (string, error) { return "", nil }
	tests := []struct {
		name  string
		tools []workflows.Tool
		want  string
	}{
		{"duplicate", []workflows.Tool{workflows.NewTool("a", "d", ok), workflows.NewTool("a", "d", ok)}, "registered twice"},
		{"bad name", []workflows.Tool{workflows.NewTool("a/b", "d", ok)}, `invalid tool name "a/b"`},
		{"no description", []workflows.Tool{workflows.NewTool("a", "", ok)}, "empty description"},
		{"bad task support", []workflows.Tool{workflows.NewTool("a", "d", ok, workflows.WithTaskSupport("sometimes"))}, "invalid task support"},
		{"input not a struct", []workflows.Tool{workflows.NewTool("a", "d", notStruct)}, "not a struct"},
		{"range on a missing property", []workflows.Tool{workflows.NewTool("a", "d", ok, workflows.WithRange("x", 0, 1))}, `no property "x"`},
		{"enum without a callback, value of another type", []workflows.Tool{workflows.NewTool("a", "d", withMode, workflows.WithEnum("mode", "fast", 2))}, `property "mode": enum value 2 is of type integer; its type must be string`},
		{"default outside the range", []workflows.Tool{workflows.NewTool("a", "d", withMode, workflows.WithRange("count", 1, 10), workflows.WithDefault("count", 11))}, `property "count": default 11 is more than the maximum 10`},
		// A pre-run input without a schema asks for an empty object; one needs a
		// key and, when it has a schema, an object schema.
		{"pre-run input without key", []workflows.Tool{workflows.NewTool("a", "d", ok, workflows.WithPreRunInput("", "m", json.RawMessage(`{"type":"object"}`)))}, "pre-run input has no key"},
		{"output schema not an object schema", []workflows.Tool{workflows.NewTool("a", "d", ok, workflows.WithOutputSchema(json.RawMessage(`{"type":"string"}`)))}, "output schema"},
		{"read-only and destructive", []workflows.Tool{workflows.NewTool("a", "d", ok, workflows.WithReadOnlyHint(), workflows.WithDestructiveHint(true))}, "cannot be destructive"},
		{"input schema not an object schema", []workflows.Tool{workflows.NewTool("a", "d", raw, workflows.WithInputSchema(json.RawMessage(`{"type":"string"}`)))}, "input schema"},
		{"input schema with schema options", []workflows.Tool{workflows.NewTool("a", "d", raw, workflows.WithInputSchema(json.RawMessage(`{"type":"object"}`)), workflows.WithRange("x", 0, 1))}, "cannot be combined"},
		{"pre-run input with a non-object schema", []workflows.Tool{workflows.NewTool("a", "d", ok, workflows.WithPreRunInput("k", "m", json.RawMessage(`{"type":"string"}`)))}, `pre-run input "k" schema`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := workflows.NewRegistry(tc.tools)
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
	raw, err := workflows.FlatSchema[flat]()
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
	if _, err := workflows.FlatSchema[nested](); err == nil {
		t.Error("a slice property was accepted")
	}
}

// tool output types used by TestOutputSchema.
type (
	reportOut struct {
		ID    string          `json:"id"`
		Pages int             `json:"pages,omitempty"`
		Tags  []string        `json:"tags"`
		Raw   json.RawMessage `json:"raw,omitempty"`
	}
)

// outputSchemaOf is the output schema NewTool derives for fn's output.
func outputSchemaOf[Out any](t *testing.T, opts ...workflows.ToolOption) string {
	t.Helper()
	tool := workflows.NewTool("a", "d", func(workflow.Context, noInput) (Out, error) { var zero Out; return zero, nil }, opts...)
	if tool.Err() != nil {
		t.Fatal(tool.Err())
	}
	return string(tool.Spec().OutputSchema)
}

// TestOutputSchema: the output schema is derived from the output type as
// the harness encodes it: a struct as is, a scalar or slice as
// {"result": value}, nothing for types that may encode either way.
func TestOutputSchema(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"struct", outputSchemaOf[reportOut](t),
			`{"type":"object","properties":{"id":{"type":"string"},"pages":{"type":"integer"},"tags":{"type":["null","array"],"items":{"type":"string"}},"raw":true},"required":["id","tags"],"additionalProperties":false}`},
		{"string", outputSchemaOf[string](t), `{"type":"object","properties":{"result":{"type":"string"}},"required":["result"],"additionalProperties":false}`},
		{"slice", outputSchemaOf[[]int](t), `{"type":"object","properties":{"result":{"type":["null","array"],"items":{"type":"integer"}}},"required":["result"],"additionalProperties":false}`},
		{"any", outputSchemaOf[any](t), ``},
		{"map", outputSchemaOf[map[string]any](t), ``},
		{"pointer", outputSchemaOf[*reportOut](t), ``},
		{"json.RawMessage", outputSchemaOf[json.RawMessage](t), ``},
		{"given", outputSchemaOf[any](t, workflows.WithOutputSchema(json.RawMessage(`{"type":"object"}`))), `{"type":"object"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("output schema = %s, want %s", tc.got, tc.want)
			}
		})
	}
}

// TestAnnotationOptions: each option sets its hint; unset hints stay
// absent, so MCP's defaults apply.
func TestAnnotationOptions(t *testing.T) {
	ok := func(workflow.Context, noInput) (string, error) { return "", nil }
	tool := workflows.NewTool("a", "d", ok, workflows.WithTitle("A"), workflows.WithIdempotentHint(),
		workflows.WithDestructiveHint(false), workflows.WithOpenWorldHint(true))
	got, _ := json.Marshal(tool.Spec().Annotations)
	if want := `{"title":"A","destructiveHint":false,"idempotentHint":true,"openWorldHint":true}`; string(got) != want {
		t.Errorf("annotations = %s, want %s", got, want)
	}
	if a := workflows.NewTool("b", "d", ok).Spec().Annotations; a != nil {
		t.Errorf("annotations without options = %+v, want none", a)
	}
}

// TestWithScopes: the scopes reach the spec the worker publishes, the spec
// is a copy, and a scope outside the RFC 6749 grammar makes the tool
// unbuildable, naming the tool and the scope.
func TestWithScopes(t *testing.T) {
	ok := func(workflow.Context, noInput) (string, error) { return "", nil }
	tool := workflows.NewTool("a", "d", ok, workflows.WithScopes("refunds:write"), workflows.WithScopes("audit.read"))
	if err := tool.Err(); err != nil {
		t.Fatal(err)
	}
	spec := tool.Spec()
	if got := fmt.Sprint(spec.Scopes); got != "[refunds:write audit.read]" {
		t.Fatalf("scopes = %s", got)
	}
	spec.Scopes[0] = "changed"
	if got := tool.Spec().Scopes[0]; got != "refunds:write" {
		t.Fatalf("the spec shares its scopes: %s", got)
	}
	raw, _ := json.Marshal(tool.Spec())
	if !strings.Contains(string(raw), `"scopes":["refunds:write","audit.read"]`) {
		t.Errorf("published spec %s does not carry the scopes", raw)
	}
	if s := workflows.NewTool("b", "d", ok).Spec(); s.Scopes != nil {
		t.Errorf("scopes without the option = %v, want none", s.Scopes)
	}
	for _, bad := range []string{"", "two words", `quo"te`, `back\slash`, "caf\u00e9", "tab\t"} {
		err := workflows.NewTool("c", "d", ok, workflows.WithScopes(bad)).Err()
		if err == nil || !strings.Contains(err.Error(), "tool c") || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("WithScopes(%q): err = %v, want one naming the tool and the scope", bad, err)
		}
	}
}

func TestWithInputSchema(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	tool := workflows.NewTool("a", "d", func(workflow.Context, json.RawMessage) (string, error) { return "", nil },
		workflows.WithInputSchema(schema))
	if err := tool.Err(); err != nil {
		t.Fatal(err)
	}
	if got := string(tool.Spec().InputSchema); got != string(schema) {
		t.Fatalf("input schema = %s, want %s", got, schema)
	}
}
