package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
)

// route is one method of the session dialect's table.
type route struct {
	// label is the method's metric label (methods.Other: not counted by
	// name).
	label string
	// serve answers the method in the SDK server's middleware; nil: the
	// SDK's own handler answers it. side is the request's record (nil:
	// none), next the SDK's handler.
	serve func(m *Dialect, ctx context.Context, method string, req mcp.Request, side *requestSide, next mcp.MethodHandler) (mcp.Result, error)
	// register registers the SDK's handler of a method the SDK does not
	// know (the Tasks extension's tasks/*); nil: the SDK has one.
	register func(t *taskMethods, server *mcp.Server, method string) error
	// taskField reports whether a request's params hold the 2025-11-25
	// task field (nil: the method has none).
	taskField func(params map[string]json.RawMessage) bool
}

// table is every method the SDK's server takes, the standard ones and the
// ones registered with it: how the middleware serves it, what is
// registered, and how it is counted. Any other method is -32601.
var table = map[string]route{
	methods.Initialize: {label: methods.Initialize, serve: (*Dialect).initialize, taskField: declaresTasks},
	methods.Ping:       {label: methods.Ping},
	methods.Discover:   {label: methods.Discover},
	methods.ToolsList: {label: methods.ToolsList,
		serve: func(m *Dialect, ctx context.Context, _ string, req mcp.Request, _ *requestSide, _ mcp.MethodHandler) (mcp.Result, error) {
			return m.Lister.List(ctx, m.sessionListing(req))
		}},
	methods.ToolsCall:             {label: methods.ToolsCall, serve: (*Dialect).callTool, taskField: wantsTask},
	methods.TasksGet:              {label: methods.TasksGet, serve: sessionTasks((*taskMethods).getSession), register: registerGet},
	methods.TasksUpdate:           {label: methods.TasksUpdate, register: registerUpdate},
	methods.TasksCancel:           {label: methods.TasksCancel, serve: sessionTasks((*taskMethods).cancelSession), register: registerCancel},
	methods.TasksResult:           {label: methods.TasksResult, serve: sessionTasks((*taskMethods).resultSession), register: registerResult},
	methods.TasksList:             {label: methods.TasksList, serve: sessionTasks((*taskMethods).listSession), register: registerList},
	methods.ResourcesList:         {label: methods.ResourcesList, serve: listResources},
	methods.ResourceTemplatesList: {label: methods.Other, serve: listResourceTemplates},
	methods.ResourcesRead:         {label: methods.ResourcesRead, serve: (*Dialect).readResource},
	methods.ResourcesSubscribe:    {label: methods.Other},
	methods.ResourcesUnsubscribe:  {label: methods.Other},
	methods.PromptsList:           {label: methods.PromptsList},
	methods.PromptsGet:            {label: methods.PromptsGet},
	methods.Complete:              {label: methods.Other},
	methods.SetLoggingLevel:       {label: methods.Other},
	methods.Listen:                {label: methods.Other},
	methods.Cancelled:             {label: methods.Other},
	methods.Initialized:           {label: methods.Other},
	methods.RootsListChanged:      {label: methods.Other},
	methods.Progress:              {label: methods.Other},
}

// Label is the metric label of method, if the SDK's server takes it.
func Label(method string) (string, bool) {
	rt, ok := table[method]
	return rt.label, ok
}

// registerMethods registers with the SDK server the handlers of the
// table's methods it does not know.
func (t *taskMethods) registerMethods(server *mcp.Server) error {
	for _, method := range slices.Sorted(maps.Keys(table)) {
		if reg := table[method].register; reg != nil {
			if err := reg(t, server, method); err != nil {
				return fmt.Errorf("mcpmount: register %s: %w", method, err)
			}
		}
	}
	return nil
}

// registerGet registers the Tasks extension's tasks/get, which refuses a
// session-dialect request that did not declare the extension; so do
// registerUpdate and registerCancel for tasks/update and tasks/cancel.
func registerGet(t *taskMethods, server *mcp.Server, method string) error {
	return mcp.AddReceivingCustomMethod(server, method, t.getTask)
}

// registerUpdate registers the Tasks extension's tasks/update.
func registerUpdate(t *taskMethods, server *mcp.Server, method string) error {
	return mcp.AddReceivingCustomMethod(server, method, t.updateTask)
}

// registerCancel registers the Tasks extension's tasks/cancel.
func registerCancel(t *taskMethods, server *mcp.Server, method string) error {
	return mcp.AddReceivingCustomMethod(server, method, t.cancelTask)
}

// registerResult registers tasks/result, which the middleware serves to
// session-dialect requests; any other request gets -32601.
func registerResult(_ *taskMethods, server *mcp.Server, method string) error {
	return mcp.AddReceivingCustomMethod(server, method,
		func(context.Context, *mcp.ServerSession, *wire.TaskParams) (*core.ToolResult, error) {
			return nil, wire.ErrMethodNotFound(method)
		})
}

// registerList registers tasks/list, which the middleware serves to
// session-dialect requests; any other request gets -32601.
func registerList(_ *taskMethods, server *mcp.Server, method string) error {
	return mcp.AddReceivingCustomMethod(server, method,
		func(context.Context, *mcp.ServerSession, *listTasksParams) (*listTasksResult, error) {
			return nil, wire.ErrMethodNotFound(method)
		})
}

// sessionTasks serves a 2025-11-25 tasks/* method to a session-dialect
// request with serve, given its params.taskId; any other request goes on to the SDK's handler (the
// Tasks extension's).
func sessionTasks(serve func(t *taskMethods, ctx context.Context, req mcp.Request, rawID json.RawMessage) (mcp.Result, error)) func(*Dialect, context.Context, string, mcp.Request, *requestSide, mcp.MethodHandler) (mcp.Result, error) {
	return func(m *Dialect, ctx context.Context, method string, req mcp.Request, _ *requestSide, next mcp.MethodHandler) (mcp.Result, error) {
		if sessionRequest(req) {
			return serve(m.tasks, ctx, req, taskIDParam(req))
		}
		return next(ctx, method, req)
	}
}

// listResources answers resources/list.
func listResources(*Dialect, context.Context, string, mcp.Request, *requestSide, mcp.MethodHandler) (mcp.Result, error) {
	return wire.ListResources(false, 0), nil
}

// listResourceTemplates answers resources/templates/list.
func listResourceTemplates(*Dialect, context.Context, string, mcp.Request, *requestSide, mcp.MethodHandler) (mcp.Result, error) {
	return wire.ListResourceTemplates(false, 0), nil
}
