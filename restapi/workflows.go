package restapi

import (
	"encoding/json"
	"net/http"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
)

// workflowEntry is one tool in GET /workflows: what MCP's tools/list says
// of it, in REST's terms.
type workflowEntry struct {
	WorkflowID   string                   `json:"workflowId"`
	Description  string                   `json:"description"`
	InputSchema  json.RawMessage          `json:"inputSchema"`
	OutputSchema json.RawMessage          `json:"outputSchema,omitempty"`
	Annotations  *signals.ToolAnnotations `json:"annotations,omitempty"`
	TaskSupport  signals.TaskSupport      `json:"taskSupport"`
	// PreRunInputs are the keys POST /runs must answer in preRunInputs.
	PreRunInputs []string `json:"preRunInputs,omitempty"`
}

// listWorkflowsResponse is the 200 answer of GET /workflows.
type listWorkflowsResponse struct {
	Workflows []workflowEntry `json:"workflows"`
}

// listWorkflows serves GET /workflows: the tools the catalog serves now
// that are offered to the caller (its tenant may see them, its token
// grants their scopes: signals.ToolSpec.OfferedTo), sorted by id, as MCP's
// tools/list lists them.
func (h *handler) listWorkflows(w http.ResponseWriter, r *http.Request, caller signals.Subject) {
	tools, err := h.kit.Catalog().Tools(r.Context())
	if err != nil {
		h.log.Error("read the tool catalog", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "internal_error", "the tool catalog cannot be read now")
		return
	}
	out := listWorkflowsResponse{Workflows: []workflowEntry{}}
	for _, t := range tools {
		spec := t.Spec()
		if !spec.OfferedTo(caller) {
			continue
		}
		e := workflowEntry{WorkflowID: spec.Name, Description: spec.Description, InputSchema: t.InputSchema(),
			OutputSchema: spec.OutputSchema, Annotations: spec.Annotations, TaskSupport: spec.TaskSupport}
		for _, in := range spec.PreRunInputs {
			e.PreRunInputs = append(e.PreRunInputs, in.Key)
		}
		out.Workflows = append(out.Workflows, e)
	}
	writeJSON(w, http.StatusOK, out)
}
