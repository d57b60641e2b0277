package core

import (
	"cmp"

	"github.com/openwop/temporal-mcp/signals"
)

// RunResult is the CallToolResult of a terminal run: what a blocking
// tools/call answers and what a completed task inlines.
func RunResult(snap signals.Snapshot) *ToolResult {
	res := &ToolResult{}
	if snap.Result != nil {
		for _, c := range snap.Result.Content {
			res.Content = append(res.Content, Content{Type: cmp.Or(c.Type, "text"), Text: c.Text})
		}
		res.StructuredContent = snap.Result.StructuredContent
		res.IsError = snap.Result.IsError
	}
	switch snap.Status {
	case signals.StatusCompleted:
		if len(res.Content) == 0 {
			res.Content = []Content{{Type: "text", Text: cmp.Or(string(snap.Outputs), "{}")}}
		}
	case signals.StatusFailed:
		res.IsError = true
		if len(res.Content) == 0 {
			msg := "the run failed"
			if snap.Error != nil && snap.Error.Message != "" {
				msg = snap.Error.Message
			}
			res.Content = []Content{{Type: "text", Text: msg}}
		}
	case signals.StatusCancelled:
		res.IsError = true
		res.StructuredContent = nil
		res.Content = []Content{{Type: "text", Text: "the run was cancelled"}}
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	return res
}

// InputRequests projects every open interrupt a client can answer onto an
// elicitation/create request keyed by its raw interruptId.
func InputRequests(snap signals.Snapshot) map[string]ElicitRequest {
	var out map[string]ElicitRequest
	for _, it := range snap.Interrupts {
		if !it.ClientAnswered() {
			continue
		}
		if out == nil {
			out = make(map[string]ElicitRequest, len(snap.Interrupts))
		}
		out[it.ID] = ElicitRequest{
			Method: "elicitation/create",
			Params: ElicitParams{Mode: "form", Message: it.Message(), RequestedSchema: it.RequestedSchema()},
		}
	}
	return out
}
