package workflows

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

// The tests that need unexported identifiers: the encoding of tool outputs
// and the current details. The other tests are in package workflows_test.

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

func TestCurrentDetails(t *testing.T) {
	snap := signals.Snapshot{RunID: "acme/r1", Status: signals.StatusWaitingApproval,
		StatusMessage: signals.StatusWaitingApproval.Message(), Owner: signals.Owner{Tenant: "acme"}}
	tests := []struct {
		name string
		in   []signals.Interrupt
		want []string
		not  []string
	}{
		{"nothing open", nil, []string{"**Status:** `waiting-approval`"}, []string{"Waiting for", "Who may answer"}},
		{"approval for listed approvers", []signals.Interrupt{{ID: "acme/r1-i1", NodeID: "review", Kind: signals.KindApproval,
			Key: "review", Title: "Publish?", Actions: []string{"accept", "reject"}, Approvers: []string{"urn:user:bob"}}},
			[]string{"### Waiting for approval: Publish?", "only `urn:user:bob`, of tenant `acme`", "`accept`, `reject`",
				"`tasks/update` on task `acme/r1` with `inputResponses[\"acme/r1-i1\"]`",
				"`POST /runs/acme~2Fr1/interrupts/review` with `{\"resumeValue\": {\"action\": \"accept|reject\"}}`"},
			[]string{"any subject"}},
		{"question for the tenant", []signals.Interrupt{{ID: "acme/r1-i2", NodeID: "ask", Kind: signals.KindClarification,
			Key: "name", Title: "Your name?", Description: "As on your passport."}},
			[]string{"### Waiting for input: Your name?", "As on your passport.", "any subject of tenant `acme`", "matching the interrupt's schema"},
			[]string{"Actions:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snap
			s.Interrupts = tt.in
			d := currentDetails(s)
			for _, w := range tt.want {
				if !strings.Contains(d, w) {
					t.Errorf("details lack %q:\n%s", w, d)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(d, n) {
					t.Errorf("details contain %q:\n%s", n, d)
				}
			}
		})
	}
}
