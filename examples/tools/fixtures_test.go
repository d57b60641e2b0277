package tools_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

func TestConfirmDelete(t *testing.T) {
	tests := []struct {
		name string
		res  signals.Resolution
		text string
	}{
		{"confirmed", signals.Resolution{Action: signals.ActionAccept, Content: json.RawMessage(`{"confirm":true}`)}, "Deleted a.txt."},
		{"not confirmed", signals.Resolution{Action: signals.ActionAccept, Content: json.RawMessage(`{"confirm":false}`)}, "Kept a.txt: the deletion was not confirmed."},
		{"declined", signals.Resolution{Action: signals.ActionDecline}, "Kept a.txt: the deletion was declined."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			var s signals.Snapshot
			h.at(time.Second, func() {
				s = h.snapshot()
				res := tc.res
				res.InterruptID, res.ResolvedBy, res.RequestID = testRunID+"-i1", alice, "x"
				h.resolve(res)
			})
			h.run("confirm_delete", map[string]any{"filename": "a.txt"}, nil)
			if s.Status != signals.StatusWaitingInput || len(s.Interrupts) != 1 {
				t.Fatalf("suspended snapshot = %+v", s)
			}
			rec, err := h.record()
			if err != nil {
				t.Fatal(err)
			}
			checkLog(t, rec.Events)
			if got := rec.Snapshot.Result.Content[0].Text; got != tc.text {
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
		pre  map[string]json.RawMessage
		text string
		code string
	}{
		{"greet", "greet", map[string]any{"name": "Alice"}, nil, "Hello, Alice!", ""},
		{"pre-run input", "test_tool_with_task", map[string]any{}, map[string]json.RawMessage{tools.PreRunUserName: json.RawMessage(`{"name":"Alice"}`)}, "Hello, Alice!", ""},
		{"pre-run input missing", "test_tool_with_task", map[string]any{}, nil, "", "missing_input"},
		{"slow compute", "slow_compute", map[string]any{"seconds": 1, "label": "x"}, nil, `Computed "x" in 1 second(s).`, ""},
		{"slow compute zero", "slow_compute", map[string]any{"seconds": 0}, nil, `Computed "" in 0 second(s).`, ""},
		{"delay", "delay", map[string]any{"delayMs": 100}, nil, `{"sleptMs":100}`, ""},
		{"bad arguments", "greet", map[string]any{"name": 5}, nil, "", workflows.CodeInvalidArguments},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.run(tc.tool, tc.args, tc.pre)
			rec, err := h.record()
			checkLog(t, rec.Events)
			if tc.code != "" {
				if rec.Snapshot.Error == nil || rec.Snapshot.Error.Code != tc.code {
					t.Fatalf("err %v, snapshot error %+v; want code %s", err, rec.Snapshot.Error, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := rec.Snapshot.Result.Content[0].Text; got != tc.text {
				t.Errorf("text = %q, want %q", got, tc.text)
			}
		})
	}
}
