package wire

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
)

// The resources a mount serves: the results of runs too large to answer
// inline (core.Results). They are found through the resource_link of
// the result that left them out, not listed: resources/list answers none,
// resources/templates/list the one template of their URIs.

// ResourceListResult is the answer to resources/list.
type ResourceListResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType,omitempty"`
	// TTLMs and CacheScope are required on 2026-07-28 lists (SEP-2549).
	TTLMs      *int64 `json:"ttlMs,omitempty"`
	CacheScope string `json:"cacheScope,omitempty"`
	// Resources is always empty: a run's result is linked from the
	// result itself.
	Resources []*mcp.Resource `json:"resources"`
}

// ResourceTemplatesResult is the answer to resources/templates/list.
type ResourceTemplatesResult struct {
	mcp.ResultBase
	ResultType        string                  `json:"resultType,omitempty"`
	TTLMs             *int64                  `json:"ttlMs,omitempty"`
	CacheScope        string                  `json:"cacheScope,omitempty"`
	ResourceTemplates []*mcp.ResourceTemplate `json:"resourceTemplates"`
}

// ListResources answers resources/list; for 2026-07-28 it is labelled
// complete and cached ttlMs by anyone (labelled: the list is the same for
// every caller).
func ListResources(labelled bool, ttlMs int64) *ResourceListResult {
	res := &ResourceListResult{Resources: []*mcp.Resource{}}
	if labelled {
		res.ResultType, res.TTLMs, res.CacheScope = ResultComplete, &ttlMs, "public"
	}
	return res
}

// ListResourceTemplates answers resources/templates/list: the template of
// the URIs of runs' results (core.ResultTemplate), labelled as
// ListResources labels its list.
func ListResourceTemplates(labelled bool, ttlMs int64) *ResourceTemplatesResult {
	res := &ResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{{
		URITemplate: core.ResultTemplate,
		Name:        "run-result",
		Title:       "A run's result",
		Description: "The whole result of a run whose result was too large to answer inline, in pages: part is " +
			core.PartText + " (its text, text/plain) or " + core.PartStructured + " (its structuredContent, application/json); " +
			"each page's _meta[\"" + core.MetaPage + "\"] names the next. taskId is the run's task id.",
	}}}
	if labelled {
		res.ResultType, res.TTLMs, res.CacheScope = ResultComplete, &ttlMs, "public"
	}
	return res
}

// ResourceURI decodes the uri of resources/read params; a missing or
// non-string uri is -32602.
func ResourceURI(raw json.RawMessage) (string, error) {
	var uri string
	if err := json.Unmarshal(raw, &uri); err != nil || uri == "" {
		return "", core.InvalidParams("resources/read requires params.uri, a string")
	}
	return uri, nil
}

// ReadResource labels the answer to resources/read complete for
// 2026-07-28 (labelled).
func ReadResource(res *core.ResourceResult, err error, labelled bool) (mcp.Result, error) {
	if err != nil {
		return nil, err
	}
	if labelled {
		res.ResultType = ResultComplete
	}
	return res, nil
}
