package modern

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
)

// route is one method of the dialect's table.
type route struct {
	// nameField is the params field the Mcp-Name header mirrors ("": the
	// method has none).
	nameField string
	// label is the method's metric label (methods.Other: not counted by
	// name).
	label string
	// answer answers a method with one result, under the request's span
	// and metrics; declared: the request declared the Tasks extension.
	answer func(d *Dialect, ctx context.Context, in *wire.Incoming, declared bool) (mcp.Result, error)
	// call marks tools/call, served under the request-ownership tracker
	// (serveCall, ServeMessage); listen marks subscriptions/listen, an
	// event stream over HTTP only (serveListen).
	call, listen bool
}

// served reports whether the dialect serves the method: a method of the
// table that is not served is -32601 / 404 after its Mcp-Name is checked.
func (rt route) served() bool { return rt.answer != nil || rt.call || rt.listen }

// table is every method the 2026-07-28 dialect knows: what it serves,
// which params field its Mcp-Name header mirrors, how it answers it and
// how it counts it. Everything else (tasks/result, tasks/list, initialize,
// ping, prompts/list, ...) is -32601 / 404.
var table = map[string]route{
	methods.Discover:  {label: methods.Discover, answer: (*Dialect).answerDiscover},
	methods.ToolsList: {label: methods.ToolsList, answer: (*Dialect).listTools},
	methods.ToolsCall: {nameField: "name", label: methods.ToolsCall, call: true},
	methods.TasksGet: {nameField: "taskId", label: methods.TasksGet,
		answer: func(d *Dialect, ctx context.Context, in *wire.Incoming, declared bool) (mcp.Result, error) {
			return d.Projector.GotTask(d.Core.Tasks().Get(ctx, declared, in.Params["taskId"]))
		}},
	methods.TasksUpdate: {nameField: "taskId", label: methods.TasksUpdate,
		answer: func(d *Dialect, ctx context.Context, in *wire.Incoming, declared bool) (mcp.Result, error) {
			return wire.Ack(d.Core.Tasks().Update(ctx, declared, in.Params["taskId"], in.Params["inputResponses"]))
		}},
	methods.TasksCancel: {nameField: "taskId", label: methods.TasksCancel, answer: (*Dialect).cancelTask},
	methods.ResourcesRead: {nameField: "uri", label: methods.ResourcesRead,
		answer: func(d *Dialect, ctx context.Context, in *wire.Incoming, _ bool) (mcp.Result, error) {
			uri, err := wire.ResourceURI(in.Params["uri"])
			if err != nil {
				return nil, err
			}
			res, err := d.Results.Read(ctx, uri)
			return wire.ReadResource(res, err, true)
		}},
	methods.ResourcesList: {label: methods.ResourcesList,
		answer: func(d *Dialect, _ context.Context, _ *wire.Incoming, _ bool) (mcp.Result, error) {
			return wire.ListResources(true, d.CacheTTLMs), nil
		}},
	methods.ResourceTemplatesList: {label: methods.Other,
		answer: func(d *Dialect, _ context.Context, _ *wire.Incoming, _ bool) (mcp.Result, error) {
			return wire.ListResourceTemplates(true, d.CacheTTLMs), nil
		}},
	methods.Listen: {label: methods.Other, listen: true},
	// Known, not served: its Mcp-Name is checked before it is refused.
	methods.PromptsGet: {nameField: "name", label: methods.PromptsGet},
}

// Served reports whether the dialect serves method.
func Served(method string) bool { return table[method].served() }

// NameField is the params field a method's Mcp-Name header mirrors.
func NameField(method string) (string, bool) {
	field := table[method].nameField
	return field, field != ""
}

// Label is the metric label of method, if the dialect knows it.
func Label(method string) (string, bool) {
	rt, ok := table[method]
	return rt.label, ok
}

// answerDiscover answers server/discover.
func (d *Dialect) answerDiscover(context.Context, *wire.Incoming, bool) (mcp.Result, error) {
	return d.discover(), nil
}

// listTools answers tools/list; a client that follows runs itself gets no
// companion tools.
func (d *Dialect) listTools(ctx context.Context, in *wire.Incoming, _ bool) (mcp.Result, error) {
	l := wire.ListModern
	l.Companions = !core.CapsFromRaw(in.Meta[mcp.MetaKeyClientCapabilities]).FollowsRuns()
	return d.Lister.List(ctx, l)
}

// cancelTask answers tasks/cancel: a run already ended is left alone, and
// that is no error.
func (d *Dialect) cancelTask(ctx context.Context, in *wire.Incoming, declared bool) (mcp.Result, error) {
	_, err := d.Core.Tasks().Cancel(ctx, declared, in.Params["taskId"])
	if errors.Is(err, core.ErrTerminal) {
		err = nil
	}
	return wire.Ack(err)
}
