package workflows_test

import (
	"encoding/json"
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
)

func TestNewRegistryRejectsBadTools(t *testing.T) {
	ok := func(workflow.Context, noInput) (string, error) { return "", nil }
	notStruct := func(workflow.Context, string) (string, error) { return "", nil }
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
		{"range on a missing property", []workflows.Tool{workflows.NewTool("a", "d", ok, workflows.WithRange("x", 0, 1))}, `no input property "x"`},
		// A pre-run input without a schema asks for an empty object; one needs a
		// key and, when it has a schema, an object schema.
		{"pre-run input without key", []workflows.Tool{workflows.NewTool("a", "d", ok, workflows.WithPreRunInput("", "m", json.RawMessage(`{"type":"object"}`)))}, "pre-run input has no key"},
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
