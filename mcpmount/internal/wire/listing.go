package wire

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
)

// Listing is how a dialect lists tools.
type Listing struct {
	// Labelled: the result carries resultType, ttlMs and cacheScope
	// (2026-07-28).
	Labelled bool
	// Execution: each tool says whether it runs as a task (the 2025-11-25
	// dialect).
	Execution bool
	// Companions: the client follows no run by the protocol (it did not
	// declare the Tasks extension), so the core's companion tools are
	// listed after the catalog's. The list tool (core.CompanionList) is
	// listed to every client, last.
	Companions bool
}

// ListModern is the 2026-07-28 listing.
var ListModern = Listing{Labelled: true}

// Lister answers tools/list from the catalog, in every dialect.
type Lister struct {
	Core    *core.Core
	Catalog catalog.Source
	Log     *zap.Logger
	// CacheTTLMs is the ttlMs of a labelled listing.
	CacheTTLMs int64
}

// List answers tools/list: the catalog's tools offered to the caller
// (signals.ToolSpec.OfferedTo: its tenant may see them and its token
// grants their scopes), listed as listing says.
func (l Lister) List(ctx context.Context, listing Listing) (mcp.Result, error) {
	caller, err := l.Core.Caller(ctx)
	if err != nil {
		return nil, err
	}
	tools, err := l.Catalog.Tools(ctx)
	if err != nil {
		l.Log.Error("read the tool catalog", zap.Error(err))
		return nil, core.Internal()
	}
	res := &ListToolsResult{Tools: []ToolDescriptor{}}
	for _, t := range tools {
		spec := t.Spec()
		if !spec.OfferedTo(caller) {
			continue
		}
		d := ToolDescriptor{Name: spec.Name, Description: spec.Description, InputSchema: t.InputSchema(),
			OutputSchema: t.OutputSchema(), Annotations: spec.Annotations}
		if listing.Execution {
			d.Execution = &ToolExecution{TaskSupport: TaskSupport(spec)}
		}
		res.Tools = append(res.Tools, d)
	}
	for _, c := range l.Core.CompanionTools(listing.Companions) {
		res.Tools = append(res.Tools, ToolDescriptor{Name: c.Name, Description: c.Description,
			InputSchema: c.InputSchema, OutputSchema: c.OutputSchema, Annotations: c.Annotations})
	}
	if listing.Labelled {
		ttl := l.CacheTTLMs
		res.ResultType = ResultComplete
		res.TTLMs = &ttl
		res.CacheScope = "private"
	}
	return res, nil
}
