package core

import (
	"cmp"
	"strings"

	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/signals"
)

// RunResult is the CallToolResult of a terminal run: what a blocking
// tools/call answers and what a completed task inlines, fitted to the
// run's result limit: its tool's (snap.ResultLimit, recorded at start)
// when it set one, limit (the server's; bytes, 0 or less: none)
// otherwise. A larger result is answered with its head and resource_links
// to the whole (fitResult, Results.Read). Every answer of a run's result
// is built here.
func RunResult(snap signals.Snapshot, limit int) *ToolResult {
	return fitResult(runResult(snap), snap.RunID, runLimit(snap, limit), snap.ResultLimit > 0)
}

// runLimit is the result limit of the run snap under a server whose limit
// is limit: the one its tool set (snap.ResultLimit), when it set one,
// whether above or below the server's; limit otherwise.
func runLimit(snap signals.Snapshot, limit int) int {
	if snap.ResultLimit > 0 {
		return snap.ResultLimit
	}
	return limit
}

// runResult is the whole CallToolResult of a terminal run.
func runResult(snap signals.Snapshot) *ToolResult {
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
// elicitation/create request keyed by its raw interruptId. It says nothing
// of who may answer (InputRequestsFor does): it decides a task's status,
// which is the same for every caller.
func InputRequests(snap signals.Snapshot) map[string]ElicitRequest {
	return inputRequests(snap, nil)
}

// InputRequestsFor is InputRequests as caller reads them: each request's
// params._meta[MetaAnswerers] says who may answer it and whether caller
// may.
func InputRequestsFor(snap signals.Snapshot, caller signals.Subject) map[string]ElicitRequest {
	return inputRequests(snap, &caller)
}

func inputRequests(snap signals.Snapshot, caller *signals.Subject) map[string]ElicitRequest {
	var out map[string]ElicitRequest
	for _, it := range snap.Interrupts {
		if !it.ClientAnswered() {
			continue
		}
		if out == nil {
			out = make(map[string]ElicitRequest, len(snap.Interrupts))
		}
		p := ElicitParams{Mode: "form", Message: it.Message(), RequestedSchema: it.RequestedSchema()}
		if caller != nil || it.ExpiresAt != nil {
			p.Meta = &ElicitMeta{ExpiresAt: it.ExpiresAt}
		}
		if caller != nil {
			a := AnswerersOf(it, *caller)
			p.Meta.Answerers = &a
		}
		out[it.ID] = ElicitRequest{Method: methods.Elicit, Params: p}
	}
	return out
}

// MetaAnswerers is the params._meta key of an input request (and the
// questions of a companion status) that says who may answer the question:
// an Answerers object.
const MetaAnswerers = "io.openwop/answerers"

// MetaExpiresAt is the params._meta key of an input request (and the
// expiresAt of a companion status's question) that says when a question
// with a deadline expires: an RFC 3339 time. At that time the run
// withdraws the question, and later answers to it resolve nothing.
const MetaExpiresAt = "io.openwop/expiresAt"

// Answerers says who may answer an open question, as one caller reads it.
type Answerers struct {
	// Approvers lists the principals (a "group:" prefix names a group)
	// that may answer; empty when anyone may.
	Approvers []string `json:"approvers,omitempty"`
	// Anyone: any caller of the run's tenant may answer.
	Anyone bool `json:"anyone,omitempty"`
	// CallerMay reports whether the caller that reads the question may
	// answer it.
	CallerMay bool `json:"callerMay"`
}

// AnswerersOf says who may answer it, and whether caller may.
func AnswerersOf(it signals.Interrupt, caller signals.Subject) Answerers {
	return Answerers{Approvers: it.Approvers, Anyone: len(it.Approvers) == 0, CallerMay: it.Eligible(caller)}
}

// who names who may answer, in a phrase ("its approvers alice, bob").
func (a Answerers) who() string {
	if a.Anyone {
		return "anyone of the tenant"
	}
	return "only its approvers " + strings.Join(a.Approvers, ", ")
}
