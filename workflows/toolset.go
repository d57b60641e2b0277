package workflows

import (
	"slices"
	"strings"
	"sync"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
)

// A ToolSet is a set of tools that changes while a worker serves it, such
// as the tools of another MCP server, which come and go with that server
// and its notifications/tools/list_changed. Registry.WithToolSet serves
// one beside a registry's tools.
type ToolSet interface {
	// Tools returns the tools of the set now.
	Tools() []Tool
	// Changed returns a channel that receives a value after Tools has
	// changed.
	Changed() <-chan struct{}
}

// WithToolSet returns a registry of r's tools and activities that also
// serves the tools of set: Registry.Run registers and publishes those the
// set has when it starts, and each time the set changes it registers the
// new ones and publishes the worker's tools again (catalog.Publish), so
// that a tool that leaves the set leaves the catalog as a stopped
// worker's tools do. A tool of the set named as one of r's, or as an
// earlier one of the set, or that carries an error (Tool.Err), is left
// out and logged. The workflow of a name that has left the set stays
// registered for the runs in flight; a tool that comes back under a name
// replaces the workflow the name's runs are served by, so it must replay
// their histories. Specs and Lookup answer r's tools only.
func (r *Registry) WithToolSet(set ToolSet) *Registry {
	out := *r
	out.set = set
	return &out
}

// ToolSet returns the tool set WithToolSet gave the registry (nil for
// none).
func (r *Registry) ToolSet() ToolSet { return r.set }

// dynamicTools registers the workflows of a ToolSet's tools on a started
// worker, each name once, through a workflow that runs the latest tool of
// that name.
type dynamicTools struct {
	set    ToolSet
	w      worker.WorkflowRegistry
	log    log.Logger
	static map[string]bool
	mu     sync.Mutex
	runs   map[string]RunWorkflow // the latest workflow of each name
}

func newDynamicTools(r *Registry, w worker.WorkflowRegistry, logger log.Logger) *dynamicTools {
	d := &dynamicTools{set: r.set, w: w, log: logger, static: map[string]bool{}, runs: map[string]RunWorkflow{}}
	for _, t := range r.tools {
		d.static[t.spec.Name] = true
	}
	return d
}

// update registers the set's tools that are new and returns the specs of
// those it serves, sorted by name.
func (d *dynamicTools) update() []signals.ToolSpec {
	if d == nil || d.set == nil {
		return nil
	}
	seen := map[string]bool{}
	var specs []signals.ToolSpec
	for _, t := range d.set.Tools() {
		name := t.spec.Name
		switch {
		case t.err != nil:
			d.log.Warn("Tool of the tool set not served", "tool", name, "error", t.err)
			continue
		case d.static[name] || seen[name]:
			d.log.Warn("Tool of the tool set not served: another tool of the worker has its name", "tool", name)
			continue
		}
		seen[name] = true
		d.mu.Lock()
		_, registered := d.runs[name]
		d.runs[name] = t.run
		d.mu.Unlock()
		if !registered {
			d.w.RegisterWorkflowWithOptions(func(ctx workflow.Context, req signals.StartRequest) (signals.RunRecord, error) {
				return d.run(name)(ctx, req)
			}, workflow.RegisterOptions{Name: name, VersioningBehavior: t.behavior})
		}
		specs = append(specs, t.Spec())
	}
	slices.SortFunc(specs, func(a, b signals.ToolSpec) int { return strings.Compare(a.Name, b.Name) })
	return specs
}

// run is the latest workflow of the tool named name.
func (d *dynamicTools) run(name string) RunWorkflow {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runs[name]
}

// changed is the set's channel of changes (nil, which never receives,
// without a set).
func (d *dynamicTools) changed() <-chan struct{} {
	if d == nil || d.set == nil {
		return nil
	}
	return d.set.Changed()
}
