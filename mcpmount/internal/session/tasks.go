package session

import (
	"context"
	"errors"

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
