package workflows

import (
	"fmt"
	"testing"
)

// The only test that needs unexported identifiers: the encoding of tool
// outputs. The other tests are in package workflows_test.

// computed is a tool output with its own result text (a ResultTexter).
type computed struct {
	Label   string `json:"label"`
	Seconds int    `json:"seconds"`
}

func (o computed) ResultText() string {
	return fmt.Sprintf("Computed %q in %d second(s).", o.Label, o.Seconds)
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
		{computed{Label: "x", Seconds: 1}, `{"label":"x","seconds":1}`, `Computed "x" in 1 second(s).`},
		{nil, `{"result":null}`, "null"},
	}
	for _, tc := range tests {
		outputs, text, err := encodeOutput(tc.out)
		if err != nil || string(outputs) != tc.outputs || text != tc.text {
			t.Errorf("encodeOutput(%v) = %s, %q, %v; want %s, %q", tc.out, outputs, text, err, tc.outputs, tc.text)
		}
	}
}
