package runs

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/signals"
)

// maxSummary bounds the run's static summary: Temporal keeps it to 400
// bytes for standalone activities and Nexus operations, and may for
// workflows.
const maxSummary = 400

// staticSummary is the one line the Temporal UI shows for a run
// (StartWorkflowOptions.StaticSummary): tool, subject, tenant, transport.
func staticSummary(tool string, caller signals.Subject, transport string) string {
	s := fmt.Sprintf("%s for %s (tenant %s) via %s", tool, subjectName(caller), caller.Tenant, transport)
	if len(s) <= maxSummary {
		return s
	}
	cut := maxSummary - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// staticDetails is the Markdown the Temporal UI shows under the summary
// (StartWorkflowOptions.StaticDetails): who started which tool how, and
// where the run's state is read.
func staticDetails(id string, tool signals.ToolSpec, caller signals.Subject, transport string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Tool:** `%s` (task queue `%s`, contract `%s`)\n\n", tool.Name, tool.TaskQueue, tool.Contract)
	fmt.Fprintf(&b, "**Tenant:** `%s`\n\n", caller.Tenant)
	fmt.Fprintf(&b, "**Started by:** `%s`", subjectName(caller))
	if caller.Issuer != "" {
		fmt.Fprintf(&b, " (issuer `%s`", caller.Issuer)
		if caller.Kind != "" {
			fmt.Fprintf(&b, ", kind `%s`", caller.Kind)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, "\n\n**Transport:** `%s`\n\n", transport)
	if tool.Plain() {
		return b.String()
	}
	fmt.Fprintf(&b, "The run's state: query `%s`; MCP `tasks/get` on task `%s`; REST `GET /runs/%s`. "+
		"Current Details show the open question, who may answer it and how.\n", signals.QueryGetRun, id, runid.Project(id))
	return b.String()
}

// subjectName names a caller.
func subjectName(s signals.Subject) string {
	if s.SubjectID != "" {
		return s.SubjectID
	}
	return "an anonymous caller"
}
