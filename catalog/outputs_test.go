package catalog_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
)

func TestCheckOutput(t *testing.T) {
	src, err := catalog.NewStatic(
		signals.ToolSpec{Name: "refund", Description: "Refund an order.", InputSchema: json.RawMessage(`{"type":"object"}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"refunded":{"type":"integer"}},"required":["refunded"]}`)},
		signals.ToolSpec{Name: "free", Description: "No output schema.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	)
	if err != nil {
		t.Fatal(err)
	}
	completed := func(tool, structured string) signals.Snapshot {
		res := &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: structured}}}
		if structured != "" {
			res.StructuredContent = json.RawMessage(structured)
		}
		return signals.Snapshot{Tool: tool, Status: signals.StatusCompleted, Result: res}
	}
	for _, tc := range []struct {
		name     string
		snap     signals.Snapshot
		failed   bool
		mentions string
	}{
		{"matching result", completed("refund", `{"refunded":2500}`), false, ""},
		{"missing property", completed("refund", `{"other":1}`), true, "refunded"},
		{"no structured content", completed("refund", ""), true, "refund"},
		{"tool without output schema", completed("free", `{"anything":true}`), false, ""},
		{"tool not in the catalog", completed("gone", `{"other":1}`), false, ""},
		{"tool error is not checked", signals.Snapshot{Tool: "refund", Status: signals.StatusCompleted,
			Result: &signals.ToolResult{IsError: true, Content: []signals.Content{{Type: "text", Text: "boom"}}}}, false, ""},
		{"working run is not checked", signals.Snapshot{Tool: "refund", Status: signals.StatusRunning}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := catalog.CheckOutput(context.Background(), src, tc.snap)
			if !tc.failed {
				if got.Status != tc.snap.Status || got.Error != nil {
					t.Fatalf("CheckOutput = %s %+v, want the snapshot as is", got.Status, got.Error)
				}
				return
			}
			if got.Status != signals.StatusFailed || got.Error == nil || got.Error.Code != catalog.CodeOutputMismatch {
				t.Fatalf("CheckOutput = %s %+v, want failed with %s", got.Status, got.Error, catalog.CodeOutputMismatch)
			}
			if !strings.Contains(got.Error.Message, tc.mentions) || got.Result == nil || !got.Result.IsError || got.Result.StructuredContent != nil {
				t.Fatalf("CheckOutput error %q result %+v, want a tool error naming %q without structured content", got.Error.Message, got.Result, tc.mentions)
			}
		})
	}
	if catalog.OutputCheck(nil) != nil {
		t.Fatal("OutputCheck(nil) checks something: want nil, nothing to check against")
	}
}
