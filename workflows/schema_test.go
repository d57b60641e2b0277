package workflows_test

import (
	"encoding/json"
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
)

// modeInput is a tool input and a question's answer at once: the same
// SchemaOptions give both their rules.
type modeInput struct {
	Mode  string  `json:"mode,omitempty" jsonschema:"how to run"`
	Count int     `json:"count" jsonschema:"how many items"`
	Label string  `json:"label,omitempty"`
	Ratio float64 `json:"ratio,omitempty"`
}

// TestSchemaOptionsDerive: each SchemaOption adds its rule to the schema
// FlatSchema derives (a question's) and to the one NewTool derives (a
// tool's input), the same rule in both; an option that does not fit the
// type is an error in both.
func TestSchemaOptionsDerive(t *testing.T) {
	tests := []struct {
		name string
		opts []workflows.SchemaOption
		// prop is the property whose schema is compared with want.
		prop, want string
		err        string
	}{
		{"none", nil, "mode", `{"type":"string","description":"how to run"}`, ""},
		{"enum", []workflows.SchemaOption{workflows.WithEnum("mode", "fast", "safe")},
			"mode", `{"type":"string","description":"how to run","enum":["fast","safe"]}`, ""},
		{"enum of integers", []workflows.SchemaOption{workflows.WithEnum("count", 1, 10, 100)},
			"count", `{"type":"integer","description":"how many items","enum":[1,10,100]}`, ""},
		{"range", []workflows.SchemaOption{workflows.WithRange("count", 1, 1000)},
			"count", `{"type":"integer","description":"how many items","minimum":1,"maximum":1000}`, ""},
		{"range of a number", []workflows.SchemaOption{workflows.WithRange("ratio", 0, 0.5)},
			"ratio", `{"type":"number","minimum":0,"maximum":0.5}`, ""},
		{"length", []workflows.SchemaOption{workflows.WithLength("label", 1, 20)},
			"label", `{"type":"string","minLength":1,"maxLength":20}`, ""},
		{"default in the enum", []workflows.SchemaOption{workflows.WithEnum("mode", "fast", "safe"), workflows.WithDefault("mode", "safe")},
			"mode", `{"type":"string","description":"how to run","default":"safe","enum":["fast","safe"]}`, ""},
		{"default before its range", []workflows.SchemaOption{workflows.WithDefault("count", 5), workflows.WithRange("count", 1, 10)},
			"count", `{"type":"integer","description":"how many items","default":5,"minimum":1,"maximum":10}`, ""},
		{"description", []workflows.SchemaOption{workflows.WithDescription("mode", "how to run order A-17")},
			"mode", `{"type":"string","description":"how to run order A-17"}`, ""},
		{"no such property", []workflows.SchemaOption{workflows.WithEnum("speed", "fast")}, "", "", `no property "speed"`},
		{"range of a string", []workflows.SchemaOption{workflows.WithRange("mode", 1, 2)}, "", "", `property "mode" is of type string, not number or integer`},
		{"length of a number", []workflows.SchemaOption{workflows.WithLength("count", 1, 2)}, "", "", `property "count" is of type integer, not string`},
		{"empty range", []workflows.SchemaOption{workflows.WithRange("count", 5, 1)}, "", "", `minimum 5 is more than the maximum 1`},
		{"negative length", []workflows.SchemaOption{workflows.WithLength("label", -1, 2)}, "", "", `length -1 to 2 is not a range of lengths`},
		{"empty enum", []workflows.SchemaOption{workflows.WithEnum("mode")}, "", "", `enum has no value`},
		{"enum value of another type", []workflows.SchemaOption{workflows.WithEnum("mode", "fast", true)}, "", "",
			`property "mode": enum value true is of type boolean; its type must be string`},
		{"enum value out of range", []workflows.SchemaOption{workflows.WithRange("count", 1, 10), workflows.WithEnum("count", 5, 50)}, "", "",
			`property "count": enum value 50 is more than the maximum 10`},
		{"default outside the enum", []workflows.SchemaOption{workflows.WithEnum("mode", "fast", "safe"), workflows.WithDefault("mode", "slow")}, "", "",
			`property "mode": default slow is not one of the values its enum allows: fast safe`},
		{"default too long", []workflows.SchemaOption{workflows.WithLength("label", 0, 3), workflows.WithDefault("label", "long")}, "", "",
			`property "label": default "long" is 4 characters long, longer than the maximum length 3`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			question, qerr := workflows.FlatSchema[modeInput](tc.opts...)
			toolOpts := make([]workflows.ToolOption, len(tc.opts))
			for i, o := range tc.opts {
				toolOpts[i] = o
			}
			tool := workflows.NewTool("modes", "d", func(workflow.Context, modeInput) (string, error) { return "", nil }, toolOpts...)
			for _, c := range []struct {
				what   string
				schema json.RawMessage
				err    error
			}{{"question", question, qerr}, {"tool input", tool.Spec().InputSchema, tool.Err()}} {
				if tc.err != "" {
					if c.err == nil || !strings.Contains(c.err.Error(), tc.err) {
						t.Errorf("%s: err = %v, want containing %q", c.what, c.err, tc.err)
					}
					continue
				}
				if c.err != nil {
					t.Fatalf("%s: %v", c.what, c.err)
				}
				var s struct {
					Properties map[string]json.RawMessage `json:"properties"`
				}
				if err := json.Unmarshal(c.schema, &s); err != nil {
					t.Fatal(err)
				}
				if got := string(s.Properties[tc.prop]); got != tc.want {
					t.Errorf("%s: property %s = %s\nwant %s", c.what, tc.prop, got, tc.want)
				}
			}
		})
	}
}
