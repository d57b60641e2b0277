package mcpmount

import (
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// projector turns run snapshots into the task shapes of the dialects (the
// Tasks extension's in dialect_2026_tasks.go, the 2025-11-25 task methods'
// in dialect_2025_11_25_tasks.go).
type projector struct {
	pollIntervalMs int64
}

// waitingPollFactor is how many times Options.PollInterval a client is
// told to wait between two polls of a task that waits for its input.
const waitingPollFactor = 4

// pollInterval is the pollIntervalMs of a task in the given status: the
// configured interval while the run works, and waitingPollFactor times it
// while the task waits for the client's input (a human's answer), which the
// run service's reads reuse for a while anyway (runs.Options.ReadWindow).
func (p projector) pollInterval(status string) int64 {
	if status == taskInputRequired {
		return waitingPollFactor * p.pollIntervalMs
	}
	return p.pollIntervalMs
}

func timestamp(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// runResult is the CallToolResult of a terminal run: what a blocking
// tools/call answers and what a completed task inlines.
func runResult(snap signals.Snapshot) *toolResult {
	res := &toolResult{}
	if snap.Result != nil {
		for _, c := range snap.Result.Content {
			typ := c.Type
			if typ == "" {
				typ = "text"
			}
			res.Content = append(res.Content, content{Type: typ, Text: c.Text})
		}
		res.StructuredContent = snap.Result.StructuredContent
		res.IsError = snap.Result.IsError
	}
	switch snap.Status {
	case signals.StatusCompleted:
		if len(res.Content) == 0 {
			text := string(snap.Outputs)
			if text == "" {
				text = "{}"
			}
			res.Content = []content{{Type: "text", Text: text}}
		}
	case signals.StatusFailed:
		res.IsError = true
		if len(res.Content) == 0 {
			msg := "the run failed"
			if snap.Error != nil && snap.Error.Message != "" {
				msg = snap.Error.Message
			}
			res.Content = []content{{Type: "text", Text: msg}}
		}
	case signals.StatusCancelled:
		res.IsError = true
		res.StructuredContent = nil
		res.Content = []content{{Type: "text", Text: "the run was cancelled"}}
	}
	if res.Content == nil {
		res.Content = []content{}
	}
	return res
}

// inputRequests projects every open interrupt a client can answer onto an
// elicitation/create request keyed by its raw interruptId.
func inputRequests(snap signals.Snapshot) map[string]inputRequest {
	var out map[string]inputRequest
	for _, it := range snap.Interrupts {
		if !it.ClientAnswered() {
			continue
		}
		if out == nil {
			out = make(map[string]inputRequest, len(snap.Interrupts))
		}
		out[it.ID] = inputRequest{
			Method: "elicitation/create",
			Params: elicitParams{Mode: "form", Message: it.Message(), RequestedSchema: it.RequestedSchema()},
		}
	}
	return out
}
