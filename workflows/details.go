package workflows

import (
	"fmt"
	"strings"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// currentDetails is the Markdown the Temporal UI shows as the run's
// current details (workflow.SetCurrentDetails): the status, and for each
// open interrupt the question, who may answer it and how. It names no
// argument or output of the run.
func currentDetails(s signals.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Status:** `%s` (%s)\n", s.Status, s.StatusMessage)
	if s.CancelReason != "" {
		fmt.Fprintf(&b, "\n**Cancel reason:** `%s`\n", s.CancelReason)
	}
	for _, in := range s.Interrupts {
		fmt.Fprintf(&b, "\n### Waiting for %s: %s\n\n", kindNoun(in.Kind), in.Title)
		if in.Description != "" {
			b.WriteString(in.Description + "\n\n")
		}
		fmt.Fprintf(&b, "- Interrupt `%s`, node `%s`, key `%s`\n", in.ID, in.NodeID, in.Key)
		if len(in.Actions) > 0 {
			fmt.Fprintf(&b, "- Actions: %s\n", codeList(in.Actions))
		}
		if len(in.Approvers) > 0 {
			fmt.Fprintf(&b, "- Who may answer: only %s, of tenant `%s`\n", codeList(in.Approvers), s.Owner.Tenant)
		} else {
			fmt.Fprintf(&b, "- Who may answer: any subject of tenant `%s`\n", s.Owner.Tenant)
		}
		fmt.Fprintf(&b, "- How: MCP `tasks/update` on task `%s` with `inputResponses[\"%s\"]`; "+
			"or REST `POST /runs/%s/interrupts/%s` with `{\"resumeValue\": %s}`\n",
			s.RunID, in.ID, runid.Project(s.RunID), in.NodeID, resumeHint(in))
	}
	return b.String()
}

// kindNoun names what an interrupt of kind k waits for.
func kindNoun(k signals.InterruptKind) string {
	switch k {
	case signals.KindApproval:
		return "approval"
	case signals.KindExternalEvent:
		return "an external event"
	default:
		return "input"
	}
}

// resumeHint is the shape of the REST resumeValue that answers in.
func resumeHint(in signals.Interrupt) string {
	if in.Kind == signals.KindApproval {
		return fmt.Sprintf(`{"action": "%s"}`, strings.Join(in.Actions, "|"))
	}
	return "<an object matching the interrupt's schema>"
}

// codeList formats items as a comma-separated list of code spans.
func codeList(items []string) string {
	quoted := make([]string, len(items))
	for i, it := range items {
		quoted[i] = "`" + it + "`"
	}
	return strings.Join(quoted, ", ")
}
