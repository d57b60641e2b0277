package conformancetools_test

import (
	"encoding/json"
	"testing"

	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

func TestConfirmDelete(t *testing.T) {
	tests := []struct {
		name   string
		answer workflowstest.Answer
		text   string
	}{
		{"confirmed", workflowstest.Accept(map[string]bool{"confirm": true}), "Deleted a.txt."},
		{"not confirmed", workflowstest.Accept(map[string]bool{"confirm": false}), "Kept a.txt: the deletion was not confirmed."},
		{"declined", workflowstest.Decline(), "Kept a.txt: the deletion was declined."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			var s signals.Snapshot
			env.AnswerFunc("confirm", func(workflowstest.Question) workflowstest.Answer {
				s, _ = env.Snapshot()
				return tc.answer
			})
			res, err := env.Call("confirm_delete", map[string]any{"filename": "a.txt"})
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != signals.StatusWaitingInput || len(s.Interrupts) != 1 {
				t.Fatalf("suspended snapshot = %+v", s)
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			testsupport.CheckEventLog(t, testRunID, res.Events)
			if got := res.Snapshot.Result.Content[0].Text; got != tc.text {
				t.Errorf("text = %q, want %q", got, tc.text)
			}
		})
	}
}

func TestSimpleTools(t *testing.T) {
	tests := []struct {
		name string
		tool string
		args any
		pre  map[string]any // answers to the pre-run inputs
		text string
		// code is the failure's; those runs start as the server would
		// not start them (Start), to see what the harness makes of it.
		code string
	}{
		{"greet", "greet", map[string]any{"name": "Alice"}, nil, "Hello, Alice!", ""},
		{"pre-run input", "test_tool_with_task", map[string]any{}, map[string]any{conformancetools.PreRunUserName: map[string]string{"name": "Alice"}}, "Hello, Alice!", ""},
		{"pre-run input missing", "test_tool_with_task", map[string]any{}, nil, "", "missing_input"},
		{"slow compute", "slow_compute", map[string]any{"seconds": 1, "label": "x"}, nil, `Computed "x" in 1 second(s).`, ""},
		{"slow compute zero", "slow_compute", map[string]any{"seconds": 0}, nil, `Computed "" in 0 second(s).`, ""},
		{"delay", "delay", map[string]any{"delayMs": 100}, nil, `{"sleptMs":100}`, ""},
		{"bad arguments", "greet", map[string]any{"name": 5}, nil, "", workflows.CodeInvalidArguments},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			for key, content := range tc.pre {
				env.Answer(key, workflowstest.Accept(content))
			}
			var res *workflowstest.Result
			var err error
			if tc.code != "" {
				raw, _ := json.Marshal(tc.args)
				res, err = env.Start(tc.tool, signals.StartRequest{Arguments: raw})
			} else {
				res, err = env.Call(tc.tool, tc.args)
			}
			if err != nil {
				t.Fatal(err)
			}
			testsupport.CheckEventLog(t, testRunID, res.Events)
			if tc.code != "" {
				if res.Snapshot.Error == nil || res.Snapshot.Error.Code != tc.code {
					t.Fatalf("err %v, snapshot error %+v; want code %s", res.Err, res.Snapshot.Error, tc.code)
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if got := res.Snapshot.Result.Content[0].Text; got != tc.text {
				t.Errorf("text = %q, want %q", got, tc.text)
			}
		})
	}
}
