package workflows_test

import (
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
)

// TestWithRunTimeout: WithRunTimeout puts the timeout in the spec, and
// NewTool refuses one that is not positive or longer than the maximum,
// naming the tool and the value.
func TestWithRunTimeout(t *testing.T) {
	noop := func(workflow.Context, struct{}) (string, error) { return "", nil }
	for _, tc := range []struct {
		d       time.Duration
		problem string
	}{
		{2 * time.Second, ""},
		{24 * time.Hour, ""},
		{0, "tool slow: run timeout 0s is not positive"},
		{-time.Minute, "tool slow: run timeout -1m0s is not positive"},
		{367 * 24 * time.Hour, "tool slow: run timeout 8808h0m0s is longer than the maximum"},
	} {
		tool := workflows.NewTool("slow", "A slow tool.", noop, workflows.WithRunTimeout(tc.d))
		if tc.problem != "" {
			if err := tool.Err(); err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("WithRunTimeout(%s): Err = %v, want %q", tc.d, err, tc.problem)
			}
			continue
		}
		if err := tool.Err(); err != nil || time.Duration(tool.Spec().RunTimeout) != tc.d {
			t.Errorf("WithRunTimeout(%s): Err %v, spec runTimeout %s", tc.d, err, tool.Spec().RunTimeout)
		}
	}
}
