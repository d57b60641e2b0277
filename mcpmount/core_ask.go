package mcpmount

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
)

// asker asks the client of a call one question while the call runs and
// returns its answer. A dialect that can reach its client during a call
// (the session era's elicitation/create) supplies one in callRequest; the
// core decides what to ask and what the answer does.
type asker interface {
	// ask sends the question and waits for the answer; it returns when
	// ctx ends (the question was withdrawn).
	ask(ctx context.Context, message string, requestedSchema any) (*mcp.ElicitResult, error)
}

// questionFollower asks the client of a blocking call the open questions
// of the run it waits for, through the call's asker, and resolves each
// answer through the path of tasks/update (resolveInputs: eligibility
// checked, applied at most once). A decline or cancel is resolved as
// such, so the tool takes its own decline path. A question that closes
// otherwise (answered elsewhere, the run ended) is withdrawn; an answer
// that arrives after that resolves nothing.
type questionFollower struct {
	m   *Mount
	c   *blockingCall
	ctx context.Context // the call's waiting context

	asking map[string]context.CancelFunc // by interruptId; only the waiting goroutine uses it
	wg     sync.WaitGroup
}

// followQuestions starts following the questions of c's run within ctx.
func (m *Mount) followQuestions(ctx context.Context, c *blockingCall) *questionFollower {
	return &questionFollower{m: m, c: c, ctx: ctx, asking: map[string]context.CancelFunc{}}
}

// outdated reports whether the run's open questions differ from the ones
// being asked.
func (f *questionFollower) outdated(s signals.Snapshot) bool {
	open := 0
	for _, it := range s.Interrupts {
		if it.Kind == signals.KindExternalEvent {
			continue
		}
		if _, ok := f.asking[it.ID]; !ok {
			return true
		}
		open++
	}
	return open != len(f.asking)
}

// sync asks the run's new open questions and withdraws the ones no longer
// open.
func (f *questionFollower) sync(s signals.Snapshot) {
	open := map[string]bool{}
	for _, it := range s.Interrupts {
		if it.Kind != signals.KindExternalEvent {
			open[it.ID] = true
		}
	}
	for id, cancel := range f.asking {
		if !open[id] {
			cancel()
			delete(f.asking, id)
		}
	}
	for _, it := range s.Interrupts {
		if !open[it.ID] {
			continue
		}
		if _, ok := f.asking[it.ID]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(f.ctx)
		f.asking[it.ID] = cancel
		f.wg.Add(1)
		go f.ask(ctx, it)
	}
}

// ask asks one question and resolves its answer.
func (f *questionFollower) ask(ctx context.Context, it signals.Interrupt) {
	defer f.wg.Done()
	log := f.m.log.With(zap.String("runId", f.c.runID), zap.String("interruptId", it.ID))
	res, err := f.c.asker.ask(ctx, it.Message(), it.RequestedSchema())
	if err != nil {
		if ctx.Err() == nil {
			// The question stays open: it can still be answered by
			// tasks/get + tasks/update or REST, or the call times out.
			log.Warn("asking the client failed; the question stays open", zap.Error(err))
		}
		return
	}
	answer, err := json.Marshal(res)
	if err != nil {
		log.Warn("the client's answer does not encode", zap.Error(err))
		return
	}
	snap, err := f.m.runs.Get(ctx, f.c.caller, f.c.runID)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("read the run to apply the client's answer", zap.Error(err))
		}
		return
	}
	if err := f.m.resolveInputs(ctx, f.c.caller, f.c.runID, snap, map[string]json.RawMessage{it.ID: answer}); err != nil && ctx.Err() == nil {
		log.Warn("the client's answer was not applied", zap.Error(err))
	}
}

// stop withdraws every pending question and waits for the goroutines.
func (f *questionFollower) stop() {
	for id, cancel := range f.asking {
		cancel()
		delete(f.asking, id)
	}
	f.wg.Wait()
}

// askPreRun asks the client a tool's missing pre-run inputs through a,
// one at a time in key order, and returns responses with the answers
// added, as a multi-round-trip request (MRTR) retry would carry them.
func (m *Mount) askPreRun(ctx context.Context, a asker, responses mcp.InputResponseMap, ir *inputRequiredResult) (mcp.InputResponseMap, error) {
	keys := make([]string, 0, len(ir.InputRequests))
	for k := range ir.InputRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := maps.Clone(responses)
	if out == nil {
		out = mcp.InputResponseMap{}
	}
	for _, k := range keys {
		req := ir.InputRequests[k]
		res, err := a.ask(ctx, req.Params.Message, req.Params.RequestedSchema)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) {
				return nil, &jsonrpc.Error{Code: codeInternalError, Message: fmt.Sprintf("elicitation of input %q failed: %s", k, rpcErr.Message)}
			}
			return nil, &jsonrpc.Error{Code: codeInternalError, Message: fmt.Sprintf("elicitation of input %q failed: %v", k, err)}
		}
		out[k] = res
	}
	return out, nil
}
