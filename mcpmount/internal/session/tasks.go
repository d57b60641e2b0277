package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
)

// taskMethods serves the tasks/* methods that reach the go-sdk server: the
// Tasks extension's (tasks/get, tasks/update, tasks/cancel of a request
// that declared it) and the 2025-11-25 ones of session-dialect requests
// (tasks_2025_11_25.go), and encodes the answer to a tools/call in the
// 2025-11-25 shapes. Each decodes its request into the core's task
// operations (core.Tasks) and encodes what they return.
type taskMethods struct {
	wire.Parts
	tasks   *core.Tasks
	tracker *ownership.Tracker
	// requests finds a request's record (and its claim).
	requests *requests
}

// register registers the tasks/* methods with the SDK server: the Tasks
// extension's, which refuse a session-dialect request that did not declare
// it, and the 2025-11-25 tasks/result and tasks/list, which the
// middleware serves (anything else gets -32601).
func (t *taskMethods) register(server *mcp.Server) error {
	if err := mcp.AddReceivingCustomMethod(server, "tasks/get", t.getTask); err != nil {
		return fmt.Errorf("mcpmount: register tasks/get: %w", err)
	}
	if err := mcp.AddReceivingCustomMethod(server, "tasks/update", t.updateTask); err != nil {
		return fmt.Errorf("mcpmount: register tasks/update: %w", err)
	}
	if err := mcp.AddReceivingCustomMethod(server, "tasks/cancel", t.cancelTask); err != nil {
		return fmt.Errorf("mcpmount: register tasks/cancel: %w", err)
	}
	if err := mcp.AddReceivingCustomMethod(server, "tasks/result",
		func(context.Context, *mcp.ServerSession, *wire.TaskParams) (*core.ToolResult, error) {
			return nil, wire.ErrMethodNotFound("tasks/result")
		}); err != nil {
		return fmt.Errorf("mcpmount: register tasks/result: %w", err)
	}
	if err := mcp.AddReceivingCustomMethod(server, "tasks/list",
		func(context.Context, *mcp.ServerSession, *listTasksParams) (*listTasksResult, error) {
			return nil, wire.ErrMethodNotFound("tasks/list")
		}); err != nil {
		return fmt.Errorf("mcpmount: register tasks/list: %w", err)
	}
	return nil
}

// getTask answers a Tasks-extension tasks/get (the SDK's handler).
func (t *taskMethods) getTask(ctx context.Context, _ *mcp.ServerSession, p *wire.TaskParams) (*wire.DetailedTaskResult, error) {
	if p == nil {
		return t.Projector.GotTask(t.tasks.Get(ctx, false, nil))
	}
	return t.Projector.GotTask(t.tasks.Get(ctx, core.CapsFromMeta(p.Meta).Tasks(), p.TaskID))
}

// updateTask answers a Tasks-extension tasks/update (the SDK's handler).
func (t *taskMethods) updateTask(ctx context.Context, _ *mcp.ServerSession, p *wire.UpdateParams) (*wire.AckResult, error) {
	if p == nil {
		return wire.Ack(t.tasks.Update(ctx, false, nil, nil))
	}
	return wire.Ack(t.tasks.Update(ctx, core.CapsFromMeta(p.Meta).Tasks(), p.TaskID, p.InputResponses))
}

// cancelTask answers a Tasks-extension tasks/cancel (the SDK's handler): a
// run already ended is left alone, and that is no error.
func (t *taskMethods) cancelTask(ctx context.Context, _ *mcp.ServerSession, p *wire.TaskParams) (*wire.AckResult, error) {
	var err error
	if p == nil {
		_, err = t.tasks.Cancel(ctx, false, nil)
	} else {
		_, err = t.tasks.Cancel(ctx, core.CapsFromMeta(p.Meta).Tasks(), p.TaskID)
	}
	if errors.Is(err, core.ErrTerminal) {
		err = nil
	}
	return wire.Ack(err)
}
