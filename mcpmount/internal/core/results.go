package core

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// Results that fit the host: a run's result larger than the result limit
// is answered with its head inline and a resource_link to the whole, which
// resources/read serves in pages (docs/protocol.md#large-results). Every
// path that answers a run's result goes through RunResult, so the rule is
// here alone.

// DefaultResultLimit is the result limit of a mount that sets none, in
// bytes of UTF-8 text: the smallest host limit known is Claude Code's
// 25,000 tokens of a tool result, and 50,000 bytes stay under it at two
// bytes a token (dense JSON, code); Claude.ai keeps about 150,000
// characters.
const DefaultResultLimit = 50_000

// The parts of a run's result a resource serves.
const (
	// PartText is the result's text: its text blocks, joined by newlines.
	PartText = "result"
	// PartStructured is the result's structuredContent (JSON).
	PartStructured = "structured"
)

// linkText names the resource_link to a result's text.
const linkText = "result"

// MetaPage is the _meta key of a page of a result resource: its Page
// (from 1), the number of Pages and the URI of the Next page (none on the
// last).
const MetaPage = "io.openwop/page"

// ResultTemplate is the URI template of the result resources
// (resources/templates/list; runid.ResultURI).
const ResultTemplate = runid.ResultURIPrefix + "{taskId}/{part}{?page}"

// ResultURI is the URI of page (from 1; 1 is written without a page) of
// part of the result of run runID (runid.ResultURI).
func ResultURI(runID, part string, page int) string {
	u := runid.ResultURI(runID, part)
	if page > 1 {
		u += "?page=" + strconv.Itoa(page)
	}
	return u
}

// parseResultURI reads a result resource's URI: the run id, the part and
// the page (1 when none is named). ok is false for a URI that names no
// result resource; a page that is not a positive integer is an error.
func parseResultURI(raw string) (runID, part string, page int, ok bool, err error) {
	u, perr := url.Parse(raw)
	if perr != nil || !strings.HasPrefix(raw, runid.ResultURIPrefix) || u.User != nil || u.Fragment != "" {
		return "", "", 0, false, nil
	}
	segs := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	if len(segs) != 2 || (segs[1] != PartText && segs[1] != PartStructured) {
		return "", "", 0, false, nil
	}
	if runID, err = runid.Parse(segs[0]); err != nil {
		return "", "", 0, false, nil
	}
	q := u.Query()
	if len(q) > 1 || len(q) == 1 && !q.Has("page") {
		return "", "", 0, false, nil
	}
	page = 1
	if q.Has("page") {
		if page, err = strconv.Atoi(q.Get("page")); err != nil || page < 1 || len(q["page"]) > 1 {
			return "", "", 0, true, InvalidParams(fmt.Sprintf("invalid resource URI %q: page must be one integer from 1", raw))
		}
	}
	return runID, segs[1], page, true, nil
}

// resultText is the text a result's resource serves: its text blocks,
// joined by newlines.
func resultText(res *ToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// pageBounds cuts text into pages of at most limit bytes, each ending on a
// character boundary: the offsets at which pages 2, 3, ... start, and the
// end.
func pageBounds(text string, limit int) []int {
	size := max(limit, utf8.UTFMax)
	if limit <= 0 {
		size = len(text) // no limit: one page
	}
	var ends []int
	for start := 0; start < len(text); {
		end := len(text)
		if size < end-start {
			end = start + size
		}
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end--
		}
		ends = append(ends, end)
		start = end
	}
	if ends == nil {
		ends = []int{0}
	}
	return ends
}

// page returns page n (from 1) of text cut by pageBounds, and the number of
// pages; ok is false past the last page.
func page(text string, limit, n int) (p string, pages int, ok bool) {
	ends := pageBounds(text, limit)
	if n > len(ends) {
		return "", len(ends), false
	}
	start := 0
	if n > 1 {
		start = ends[n-2]
	}
	return text[start:ends[n-1]], len(ends), true
}

// fitResult applies the result limit to res, the result of run runID: a
// result whose text and structuredContent together are over limit (bytes;
// 0 or less: no limit) keeps its structuredContent out (a resource_link
// instead) and, when its text alone is over limit, only the text's first
// page inline, with a resource_link to the whole text. A note says what
// was left out and how to read it, and whose limit it is: the tool's
// (own) or the server's.
func fitResult(res *ToolResult, runID string, limit int, own bool) *ToolResult {
	text := resultText(res)
	if limit <= 0 || len(text)+len(res.StructuredContent) <= limit {
		return res
	}
	var content []Content
	var note []string
	if len(text) > limit {
		head, pages, _ := page(text, limit, 1)
		content = append(content, Content{Type: "text", Text: head})
		whose := "this server's"
		if own {
			whose = "this tool's"
		}
		note = append(note, fmt.Sprintf("The result's text is %d bytes, over %s limit of %d: above is its first page of %d. "+
			"resources/read of %s serves it in pages (_meta %q names the next); page 2 is %s.",
			len(text), whose, limit, pages, ResultURI(runID, PartText, 1), MetaPage, ResultURI(runID, PartText, 2)))
	} else {
		content = append(content, res.Content...)
	}
	links := []Content{}
	if len(text) > limit {
		links = append(links, Content{Type: "resource_link", URI: ResultURI(runID, PartText, 1),
			Name: linkText, MimeType: "text/plain", Size: int64(len(text))})
	}
	if n := len(res.StructuredContent); n > 0 {
		note = append(note, fmt.Sprintf("The structuredContent (%d bytes) is not inlined: resources/read of %s serves it.",
			n, ResultURI(runID, PartStructured, 1)))
		links = append(links, Content{Type: "resource_link", URI: ResultURI(runID, PartStructured, 1),
			Name: "structuredContent", MimeType: "application/json", Size: int64(n)})
		res.StructuredContent = nil
	}
	content = append(content, Content{Type: "text", Text: "[" + strings.Join(note, " ") + "]"})
	res.Content = append(content, links...)
	return res
}

// withoutHead is res without the head fitResult cut its text to (the
// note and the links remain), for a status whose text carries the head;
// any other result is returned as it is.
func withoutHead(res *ToolResult) *ToolResult {
	for _, c := range res.Content {
		if c.Type == "resource_link" && c.Name == linkText {
			out := *res
			out.Content = res.Content[1:]
			return &out
		}
	}
	return res
}

// ResourceResult is a ReadResourceResult: one page of a result resource.
type ResourceResult struct {
	mcp.ResultBase
	// ResultType is "complete" for 2026-07-28 requests, omitted for
	// session-dialect ones.
	ResultType string                  `json:"resultType,omitempty"`
	Contents   []*mcp.ResourceContents `json:"contents"`
}

// ResourceNotFound is the one answer to a resources/read of a URI the
// caller cannot read: no result resource, a run of another tenant or none,
// a run without a result: -32602, as SEP-2164 has it. It carries no data.
func ResourceNotFound() *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeInvalidParams, Message: "resource not found"}
}

// Results serves the resources of runs' results (resources/read) for every
// dialect, in pages of each run's result limit (its tool's, or the core's:
// RunResult).
type Results struct {
	core *Core
}

// NewResults serves the results of the runs of m.
func NewResults(m *Core) *Results { return &Results{core: m} }

// Read serves resources/read of a run's result resource (ResultURI): the
// page of the part it names, read as the caller reads the run (tasks/get),
// so that another tenant's run is not found.
func (r *Results) Read(ctx context.Context, uri string) (*ResourceResult, error) {
	m := r.core
	caller, err := m.Caller(ctx)
	if err != nil {
		return nil, err
	}
	id, part, n, ok, err := parseResultURI(uri)
	if !ok {
		return nil, ResourceNotFound()
	}
	if err != nil {
		return nil, err
	}
	m.tracing.link(ctx, caller, id)
	snap, err := m.runs.Get(ctx, caller, id)
	switch {
	case errors.Is(err, runs.ErrNotFound) || errors.Is(err, runs.ErrTenantMismatch):
		return nil, ResourceNotFound()
	case err != nil:
		return nil, m.lookupErr(ctx, "get run", id, err)
	case !snap.Status.Terminal() || RPCFailure(snap):
		return nil, ResourceNotFound()
	}
	full := runResult(snap)
	text, mime := resultText(full), "text/plain"
	if part == PartStructured {
		text, mime = string(full.StructuredContent), "application/json"
	}
	if text == "" && part == PartStructured {
		return nil, ResourceNotFound()
	}
	p, pages, ok := page(text, runLimit(snap, m.resultLimit), n)
	if !ok {
		return nil, InvalidParams(fmt.Sprintf("invalid resource URI %q: the resource has %d pages", uri, pages))
	}
	meta := map[string]any{"page": n, "pages": pages}
	if n < pages {
		meta["next"] = ResultURI(id, part, n+1)
	}
	return &ResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: p,
		Meta: mcp.Meta{MetaPage: meta}}}}, nil
}
