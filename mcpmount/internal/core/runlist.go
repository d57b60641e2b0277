package core

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// CompanionList lists the caller's runs, so that a client that lost a
// run's handle (a host restart, a compacted context) finds it again. It is
// a tool, not a protocol method: the Tasks extension has no tasks/list. It
// is listed to every client (Options.NoRunList turns it off), and reads
// what REST GET /runs reads, through the same runs.Backend.List.
const CompanionList = signals.ReservedToolPrefix + "run_list"

// runListStatuses are the run statuses a list may be filtered by, those of
// GET /runs.
var runListStatuses = []signals.Status{signals.StatusPending, signals.StatusRunning, signals.StatusPaused,
	signals.StatusWaitingApproval, signals.StatusWaitingInput, signals.StatusWaitingExternal,
	signals.StatusCompleted, signals.StatusFailed, signals.StatusCancelling, signals.StatusCancelled}

// runListTool describes CompanionList.
func runListTool() CompanionTool {
	f := false
	statuses, _ := json.Marshal(runListStatuses)
	return CompanionTool{
		Name: CompanionList,
		Description: "List your runs (long-running tool calls), newest first: each with its runId and taskId, " +
			"to find a run again whose id you lost. Filter by tool and status; pass nextCursor back as cursor for more " +
			"(a page may hold fewer runs than limit, even none, while nextCursor is present). " +
			CompanionStatus + " (or tasks/get with the taskId) reads one.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"tool":{"type":"string","pattern":"^[A-Za-z0-9._~:-]{1,128}$","description":"only runs of this tool"},`+
			`"status":{"type":"string","enum":%s,"description":"only runs in this status"},`+
			`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"at most this many runs (default %d)"},`+
			`"cursor":{"type":"string","minLength":1,"description":"the nextCursor of the previous page, with the same filters"},`+
			`"everyone":{"type":"boolean","description":"also the runs others of your tenant started (default false: yours only)"}},`+
			`"additionalProperties":false}`, statuses, runs.MaxPageSize, runListPage)),
		OutputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"runs":{"type":"array","items":{"type":"object","properties":{`+
			`"runId":{"type":"string","description":"the run, as the companion tools and GET /runs/{runId} take it"},`+
			`"taskId":{"type":"string","description":"the run's task, as tasks/get takes it"},`+
			`"tool":{"type":"string"},"status":{"type":"string","enum":%s},`+
			`"createdAt":{"type":"string","format":"date-time"},"updatedAt":{"type":"string","format":"date-time"}},`+
			`"required":["runId","taskId","tool","status","createdAt"]}},`+
			`"nextCursor":{"type":"string","description":"pass it as cursor for the next page; absent on the last"}},`+
			`"required":["runs"]}`, statuses)),
		Annotations: &signals.ToolAnnotations{Title: "List your runs", ReadOnlyHint: true, OpenWorldHint: &f},
	}
}

// runListPage is the list tool's default page size: small, since a model
// reads every entry.
const runListPage = 20

// runList serves CompanionList on the core's runs.
type runList struct {
	*Core
	tool   CompanionTool
	schema *jsonschema.Resolved
}

// newRunList compiles the list tool's input schema.
func newRunList(m *Core) (*runList, error) {
	l := &runList{Core: m, tool: runListTool()}
	var err error
	if l.schema, err = answers.CompileSchema(l.tool.InputSchema); err != nil {
		return nil, fmt.Errorf("companion tool %s: %w", CompanionList, err)
	}
	return l, nil
}

// serves reports whether a call names the list tool (never when it is off).
func (l *runList) serves(name string) bool { return l != nil && name == CompanionList }

// runListArgs are the list tool's arguments.
type runListArgs struct {
	Tool   string         `json:"tool"`
	Status signals.Status `json:"status"`
	Limit  int            `json:"limit"`
	Cursor string         `json:"cursor"`
	// Everyone lists the tenant's runs, as GET /runs does, not only the
	// caller's.
	Everyone bool `json:"everyone"`
}

// RunListEntry is one run in the list tool's result.
type RunListEntry struct {
	RunID     string         `json:"runId"`
	TaskID    string         `json:"taskId"`
	Tool      string         `json:"tool"`
	Status    signals.Status `json:"status"`
	CreatedAt time.Time      `json:"createdAt"`
	UpdatedAt time.Time      `json:"updatedAt,omitzero"`
}

// RunListPage is the structured content of the list tool's result.
type RunListPage struct {
	Runs       []RunListEntry `json:"runs"`
	NextCursor string         `json:"nextCursor,omitempty"`
}

// call lists one page of the caller's runs with runs.Backend.List, the
// code path of GET /runs: the same tenancy, order and sealed cursors; the
// runs other subjects of the tenant started are left out unless the
// arguments ask for everyone's (a tenant's runs are readable by all its
// subjects: this is the caller's view, not a boundary).
// Arguments that do not fit, and a cursor the server did not issue for
// these filters, are tool results with isError.
func (l *runList) call(ctx context.Context, req *CallRequest) (mcp.Result, error) {
	caller, err := l.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var args runListArgs
	if problem := decodeArgs(l.schema, CompanionList, req.Arguments, &args); problem != "" {
		return toolError(problem), nil
	}
	page, err := l.runs.List(ctx, caller, runs.ListRequest{Tool: args.Tool, Status: args.Status,
		Limit: cmp.Or(args.Limit, runListPage), Cursor: args.Cursor})
	switch {
	case errors.Is(err, runs.ErrBadCursor):
		return toolError(fmt.Sprintf("%s: %v; list again without a cursor", CompanionList, err)), nil
	case err != nil && ctx.Err() != nil:
		return nil, context.Canceled
	case err != nil:
		l.log.Error("list runs through "+CompanionList, zap.Error(err))
		return nil, Internal()
	}
	out := RunListPage{Runs: make([]RunListEntry, 0, len(page.Runs)), NextCursor: page.NextCursor}
	for _, s := range page.Runs {
		if args.Everyone || s.Owner.Subject.Same(caller) {
			out.Runs = append(out.Runs, RunListEntry{RunID: s.RunID, TaskID: runid.Project(s.RunID), Tool: s.Tool,
				Status: s.Status, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt})
		}
	}
	var text strings.Builder
	fmt.Fprintf(&text, "%d run(s), newest first:", len(out.Runs))
	for _, e := range out.Runs {
		fmt.Fprintf(&text, " run %s (taskId %s) of %s, %s, started %s;", e.RunID, e.TaskID, e.Tool, e.Status,
			e.CreatedAt.UTC().Format(time.RFC3339))
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&text, " more: call %s again with the same filters and \"cursor\":%q.", CompanionList, out.NextCursor)
	}
	fmt.Fprintf(&text, " %s with a runId reads a run, its questions and its result.", CompanionStatus)
	structured, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode %s result: %w", CompanionList, err)
	}
	return &ToolResult{ToolResult: signals.ToolResult{Content: []Content{{Type: "text", Text: text.String()}},
		StructuredContent: structured}}, nil
}

// decodeArgs checks a core tool's arguments raw against its compiled input
// schema and decodes them into args; a problem is the text of the isError
// result that refuses them ("" when they fit).
func decodeArgs(schema *jsonschema.Resolved, name string, raw json.RawMessage, args any) string {
	var v any
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Sprintf("%s: the arguments are not JSON: %v", name, err)
	}
	if err := schema.Validate(v); err != nil {
		return fmt.Sprintf("%s: %s", name, answers.Explain(err))
	}
	if err := json.Unmarshal(raw, args); err != nil {
		return fmt.Sprintf("%s: %v", name, err)
	}
	return ""
}
