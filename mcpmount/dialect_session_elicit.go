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

// sessionElicits reports whether a session-era client can be asked
// questions with elicitation/create during a call: its session (HTTP
// session or stdio) declared form elicitation in initialize. A stateless
// legacy request has no declared capabilities.
func sessionElicits(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false
	}
	e := ip.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil // {} means form
}

// sessionAsker asks a session-era client the open questions of the run its
// blocking call waits for, as elicitation/create requests on the call's
// stream, and resolves each answer through the path of tasks/update
// (resolveInputs: eligibility checked, applied at most once). A decline or
// cancel is resolved as such, so the tool takes its own decline path. A
// question that closes otherwise (answered elsewhere, the run ended) has
// its request cancelled; an answer that arrives after that resolves
// nothing.
type sessionAsker struct {
	m   *Mount
	c   *blockingCall
	ctx context.Context // the call's waiting context

	asking map[string]context.CancelFunc // by interruptId; only the waiting goroutine uses it
	wg     sync.WaitGroup
}

func (m *Mount) newSessionAsker(ctx context.Context, c *blockingCall) *sessionAsker {
	return &sessionAsker{m: m, c: c, ctx: ctx, asking: map[string]context.CancelFunc{}}
}

// outdated reports whether the run's open questions differ from the ones
// being asked.
func (a *sessionAsker) outdated(s signals.Snapshot) bool {
	open := 0
	for _, it := range s.Interrupts {
		if it.Kind == signals.KindExternalEvent {
			continue
		}
		if _, ok := a.asking[it.ID]; !ok {
			return true
		}
		open++
	}
	return open != len(a.asking)
}

// sync asks the run's new open questions and withdraws the requests of
// questions no longer open.
func (a *sessionAsker) sync(s signals.Snapshot) {
	open := map[string]bool{}
	for _, it := range s.Interrupts {
		if it.Kind != signals.KindExternalEvent {
			open[it.ID] = true
		}
	}
	for id, cancel := range a.asking {
		if !open[id] {
			cancel()
			delete(a.asking, id)
		}
	}
	for _, it := range s.Interrupts {
		if !open[it.ID] {
			continue
		}
		if _, ok := a.asking[it.ID]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(a.ctx)
		a.asking[it.ID] = cancel
		a.wg.Add(1)
		go a.ask(ctx, it)
	}
}

// ask sends one elicitation/create and resolves its answer.
func (a *sessionAsker) ask(ctx context.Context, it signals.Interrupt) {
	defer a.wg.Done()
	log := a.m.log.With(zap.String("runId", a.c.runID), zap.String("interruptId", it.ID))
	res, err := a.c.session.Elicit(ctx, &mcp.ElicitParams{Message: interruptMessage(it), RequestedSchema: interruptSchema(it)})
	if err != nil {
		if ctx.Err() == nil {
			// The question stays open: it can still be answered by
			// tasks/get + tasks/update or REST, or the call times out.
			log.Warn("elicitation/create failed; the question stays open", zap.Error(err))
		}
		return
	}
	answer, err := json.Marshal(res)
	if err != nil {
		log.Warn("elicitation answer does not encode", zap.Error(err))
		return
	}
	snap, err := a.m.runs.Get(ctx, a.c.caller, a.c.runID)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("read the run to apply an elicitation answer", zap.Error(err))
		}
		return
	}
	if err := a.m.resolveInputs(ctx, a.c.caller, a.c.runID, snap, map[string]json.RawMessage{it.ID: answer}); err != nil && ctx.Err() == nil {
		log.Warn("elicitation answer not applied", zap.Error(err))
	}
}

// stop withdraws every pending request and waits for the goroutines.
func (a *sessionAsker) stop() {
	for id, cancel := range a.asking {
		cancel()
		delete(a.asking, id)
	}
	a.wg.Wait()
}

// elicitPreRun asks a session-era client a tool's missing pre-run inputs
// with elicitation/create, one at a time in key order, and returns
// responses with the answers added, as a multi-round-trip request (MRTR)
// retry would carry them.
func (m *Mount) elicitPreRun(ctx context.Context, ss *mcp.ServerSession, responses mcp.InputResponseMap, ir *inputRequiredResult) (mcp.InputResponseMap, error) {
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
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: req.Params.Message, RequestedSchema: req.Params.RequestedSchema})
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
