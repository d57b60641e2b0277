package runs

import (
	"encoding/json"

	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/openwop/temporal-mcp/signals"
)

// decoder decodes what Temporal holds of a run with the data converter:
// its close event's record, a plain workflow's result, the state and
// contract in its memo, its search attributes.
type decoder struct {
	dc converter.DataConverter
}

// decodeClose extracts the RunRecord from a close event.
func (d decoder) decodeClose(ev *historypb.HistoryEvent) (signals.RunRecord, bool) {
	var payloads *commonpb.Payloads
	switch {
	case ev.GetWorkflowExecutionCompletedEventAttributes() != nil:
		payloads = ev.GetWorkflowExecutionCompletedEventAttributes().GetResult()
	case ev.GetWorkflowExecutionFailedEventAttributes() != nil:
		payloads = ev.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetApplicationFailureInfo().GetDetails()
	case ev.GetWorkflowExecutionCanceledEventAttributes() != nil:
		payloads = ev.GetWorkflowExecutionCanceledEventAttributes().GetDetails()
	}
	if len(payloads.GetPayloads()) == 0 {
		return signals.RunRecord{}, false
	}
	var rec signals.RunRecord
	if err := d.dc.FromPayload(payloads.GetPayloads()[0], &rec); err != nil || rec.Snapshot.RunID == "" {
		return signals.RunRecord{}, false
	}
	return rec, true
}

// plainResult turns the result of a workflow that closed without a
// RunRecord into a tool result: the JSON value as text, and as structured
// content (an object as is, anything else as {"result": value}).
func (d decoder) plainResult(p *commonpb.Payloads) (*signals.ToolResult, json.RawMessage) {
	res := &signals.ToolResult{Content: []signals.Content{}}
	if len(p.GetPayloads()) == 0 {
		res.Content = append(res.Content, signals.Content{Type: "text", Text: "the run completed"})
		return res, nil
	}
	var v any
	if err := d.dc.FromPayload(p.GetPayloads()[0], &v); err != nil {
		res.Content = append(res.Content, signals.Content{Type: "text", Text: "the run completed with a result that is not JSON"})
		return res, nil
	}
	text, _ := json.Marshal(v)
	if str, ok := v.(string); ok {
		res.Content = append(res.Content, signals.Content{Type: "text", Text: str})
	} else {
		res.Content = append(res.Content, signals.Content{Type: "text", Text: string(text)})
	}
	if _, ok := v.(map[string]any); !ok {
		text, _ = json.Marshal(map[string]any{"result": v})
	}
	res.StructuredContent = text
	return res, text
}

// published decodes the state a running run published in its memo.
func (d decoder) published(info *workflowpb.WorkflowExecutionInfo) (signals.PublishedState, bool) {
	p, ok := info.GetMemo().GetFields()[signals.MemoState]
	if !ok {
		return signals.PublishedState{}, false
	}
	var pub signals.PublishedState
	if err := d.dc.FromPayload(p, &pub); err != nil || !pub.Status.Valid() || pub.Status.Terminal() {
		return signals.PublishedState{}, false
	}
	return pub, true
}

// plain reports whether the run's tool follows signals.ContractPlain.
func (d decoder) plain(info *workflowpb.WorkflowExecutionInfo) bool {
	p, ok := info.GetMemo().GetFields()[signals.MemoContract]
	if !ok {
		return false
	}
	var c signals.Contract
	return d.dc.FromPayload(p, &c) == nil && c == signals.ContractPlain
}

// keyword decodes the Keyword search attribute name of sa.
func (d decoder) keyword(sa *commonpb.SearchAttributes, name string) (string, bool) {
	p, ok := sa.GetIndexedFields()[name]
	if !ok {
		return "", false
	}
	var v string
	if err := d.dc.FromPayload(p, &v); err != nil {
		return "", false
	}
	return v, true
}

// runTimeout is the run timeout the run was started with (0: none
// recorded).
func (d decoder) runTimeout(info *workflowpb.WorkflowExecutionInfo) signals.Duration {
	var timeout signals.Duration
	if p, ok := info.GetMemo().GetFields()[signals.MemoRunTimeout]; ok {
		_ = d.dc.FromPayload(p, &timeout)
	}
	return timeout
}
