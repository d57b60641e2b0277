package restapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// TestIntegrationWorkflows: GET /workflows lists the tools as MCP's
// tools/list does, with their output schemas and annotations, and needs a
// credential.
func TestIntegrationWorkflows(t *testing.T) {
	it := newIntegration(t)
	wantError(t, it.call(http.MethodGet, "/workflows", "", ""), http.StatusUnauthorized, "unauthenticated")
	r := it.call(http.MethodGet, "/workflows", keyA, "")
	if r.status != http.StatusOK {
		t.Fatalf("GET /workflows: %d %s", r.status, r.raw)
	}
	var got listWorkflowsResponse
	if err := json.Unmarshal(r.raw, &got); err != nil {
		t.Fatal(err)
	}
	byID := map[string]workflowEntry{}
	for _, w := range got.Workflows {
		byID[w.WorkflowID] = w
	}
	pr := byID["publish_report"]
	if a := pr.Annotations; a == nil || a.Title != "Publish a report" || a.DestructiveHint == nil || *a.DestructiveHint {
		t.Errorf("publish_report annotations = %+v", pr.Annotations)
	}
	if !strings.Contains(string(pr.OutputSchema), `"reportId"`) || pr.TaskSupport != signals.TaskOptional {
		t.Errorf("publish_report = %+v", pr)
	}
	if tw := byID["test_tool_with_task"]; len(tw.PreRunInputs) != 1 {
		t.Errorf("test_tool_with_task preRunInputs = %v", tw.PreRunInputs)
	}
	if d := byID["delay"]; d.Annotations == nil || !d.Annotations.ReadOnlyHint {
		t.Errorf("delay annotations = %+v", d.Annotations)
	}
}

// TestIntegrationOutputMismatch: a completed run whose outputs do not
// match its tool's declared output schema reads failed with error code
// output_schema_mismatch naming the mismatch, and without outputs.
func TestIntegrationOutputMismatch(t *testing.T) {
	it := newIntegrationWith(t, itestOptions{specs: func(specs []signals.ToolSpec) []signals.ToolSpec {
		for i := range specs {
			if specs[i].Name == "conformance-delay" {
				specs[i].OutputSchema = json.RawMessage(`{"type":"object","properties":{"waited":{"type":"integer"}},"required":["waited"]}`)
			}
		}
		return specs
	}})
	id := it.start(keyA, "conformance-delay", `{"delayMs":0}`)
	it.waitTerminal(keyA, id, 10*time.Second)
	snap := it.get(keyA, id)
	e, _ := snap.body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if snap.body["status"] != "failed" || e["code"] != "output_schema_mismatch" || !strings.Contains(msg, "waited") || snap.body["outputs"] != nil {
		t.Fatalf("snapshot %s, want failed with output_schema_mismatch naming waited", snap.raw)
	}
}
