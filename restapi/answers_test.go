package restapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// TestIntegrationRefusedAnswers: a resolution whose resumeValue does not
// fit the question the run published (a value of the wrong type, a
// missing required property, an action not offered) is refused with 400
// validation_error naming the rule; the interrupt stays open, the run's
// log holds no resolution, and a fitting resumeValue then completes the
// run.
func TestIntegrationRefusedAnswers(t *testing.T) {
	it := newIntegration(t)
	for _, tt := range []struct {
		name, tool, inputs string
		waiting            signals.Status
		bad, rule          string
		good, want         string
	}{
		{"wrong type", "confirm_delete", `{"filename":"a.txt"}`, signals.StatusWaitingInput,
			`{"confirm":"yes"}`, "boolean", `{"confirm":true}`, "Deleted a.txt."},
		{"missing required", "confirm_delete", `{"filename":"a.txt"}`, signals.StatusWaitingInput,
			`{}`, "required", `{"confirm":true}`, "Deleted a.txt."},
		{"action not offered", "conformance-approval", `{}`, signals.StatusWaitingApproval,
			`{"action":"maybe"}`, `"maybe"`, `{"action":"accept"}`, `"approved":true`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			it.t = t
			id := it.start(keyA, tt.tool, tt.inputs)
			snap := it.waitStatus(keyA, id, tt.waiting, 20*time.Second)
			open := snap.body["interrupts"].([]any)[0].(map[string]any)
			node, interrupt := open["nodeId"].(string), open["interruptId"]
			path := runPath(id) + "/interrupts/" + node

			r := it.call(http.MethodPost, path, keyA, fmt.Sprintf(`{"resumeValue":%s}`, tt.bad))
			wantError(t, r, http.StatusBadRequest, "validation_error")
			msg := r.body["error"].(map[string]any)["message"].(string)
			if !strings.HasPrefix(msg, "resumeValue: ") || !strings.Contains(msg, tt.rule) {
				t.Fatalf("refusal %q does not name resumeValue and the rule %q", msg, tt.rule)
			}
			after := it.get(keyA, id)
			still, _ := after.body["interrupts"].([]any)
			if after.body["status"] != string(tt.waiting) || len(still) != 1 || still[0].(map[string]any)["interruptId"] != interrupt {
				t.Fatalf("after the refusal the run is %s", after.raw)
			}
			if n := countType(it.events(keyA, id), signals.EventInterruptResolved); n != 0 {
				t.Fatalf("the run's log holds %d resolutions of a refused answer", n)
			}

			r = it.call(http.MethodPost, path, keyA, fmt.Sprintf(`{"resumeValue":%s}`, tt.good))
			if r.status != http.StatusOK || r.body["interruptId"] != interrupt {
				t.Fatalf("fitting resolution: %d %s", r.status, r.raw)
			}
			it.waitTerminal(keyA, id, 20*time.Second)
			final := it.get(keyA, id)
			if final.body["status"] != string(signals.StatusCompleted) || !strings.Contains(string(final.raw), tt.want) {
				t.Fatalf("final snapshot %s, want completed with %s", final.raw, tt.want)
			}
		})
	}
}
