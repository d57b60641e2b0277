package mcpmount

import (
	"strings"
	"testing"
)

// TestCancelledKeepsItsStep: a run cancelled while it reports a step keeps
// that step in its final status message, as tasks/get reads it.
func TestCancelledKeepsItsStep(t *testing.T) {
	s := newStack(t, nil, "")
	c := s.client(t, "", tasksCaps())
	id, _ := callTool(t, c, "slow_compute", map[string]any{"seconds": 60, "label": "step"})["taskId"].(string)
	waitTask(t, c, id, func(r map[string]any) bool {
		msg, _ := r["statusMessage"].(string)
		return strings.Contains(msg, "step compute")
	})
	wantResult(t, c.call("tasks/cancel", map[string]any{"taskId": id}, nil))
	done := waitTask(t, c, id, status("cancelled"))
	if msg, _ := done["statusMessage"].(string); !strings.HasPrefix(msg, "the run is cancelled: step compute") {
		t.Fatalf("cancelled task = %v, want its message to keep the step", done)
	}
}
