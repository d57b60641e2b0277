package modern

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// metaSubscriptionID is the _meta key naming the listen request every
// message of its stream belongs to.
const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// maxListenTasks bounds the task ids one subscriptions/listen may name.
const maxListenTasks = 100

// taskNotification is the params of notifications/tasks: the task as
// tasks/get answers it at that moment, without resultType.
type taskNotification struct {
	Meta map[string]any `json:"_meta"`
	wire.Task
	InputRequests map[string]core.ElicitRequest `json:"inputRequests,omitempty"`
	Result        *core.ToolResult              `json:"result,omitempty"`
	Error         *wire.TaskError               `json:"error,omitempty"`
}

// serveListen serves a 2026-07-28 subscriptions/listen (the SDK drops the
// Tasks extension's notifications.taskIds, so the mount serves the method
// itself, after the checks every 2026-07-28 request passes). The response
// is an SSE stream: notifications/subscriptions/acknowledged listing the
// subscribed task ids the caller may read (any other id is dropped, as a
// nonexistent one is), then notifications/tasks with each task's state
// every time its status or open input requests change, and the listen
// result once every subscribed task is terminal. Each task is followed by a
// long poll of its run's history (core.Tasks.Follow), which ends when the client
// leaves. Only taskIds is honoured: the core filters (list changes,
// resource subscriptions) have nothing to report here.
func (d *Dialect) serveListen(w http.ResponseWriter, r *http.Request, in *wire.Incoming) {
	caller, msg, params, meta := in.Caller, &in.Msg, in.Params, in.Meta
	fail := func(status int, code int64, message string, data any) {
		wire.WriteRefusal(w, wire.Refusal{Status: status, ID: msg.ID, Code: code, Message: message, Data: data})
	}
	if !in.Accept.ListsSSE {
		fail(http.StatusBadRequest, wire.CodeInvalidRequest,
			"subscriptions/listen answers with an event stream: Accept must list text/event-stream", nil)
		return
	}
	var filter map[string]json.RawMessage
	if err := json.Unmarshal(params["notifications"], &filter); err != nil || filter == nil {
		fail(http.StatusBadRequest, wire.CodeInvalidParams, "subscriptions/listen requires params.notifications, an object", nil)
		return
	}
	rawIDs, subscribed := filter["taskIds"]
	var wireIDs []string
	if subscribed {
		var caps core.ClientCaps
		_ = json.Unmarshal(meta["io.modelcontextprotocol/clientCapabilities"], &caps)
		if !caps.Tasks() {
			e := core.TasksExtensionRequired("subscriptions/listen with notifications.taskIds")
			fail(http.StatusBadRequest, e.Code, e.Message, e.Data)
			return
		}
		if err := json.Unmarshal(rawIDs, &wireIDs); err != nil {
			fail(http.StatusBadRequest, wire.CodeInvalidParams, "params.notifications.taskIds must be an array of task ids", nil)
			return
		}
		if len(wireIDs) > maxListenTasks {
			fail(http.StatusBadRequest, wire.CodeInvalidParams, fmt.Sprintf(
				"params.notifications.taskIds names %d tasks; at most %d are accepted", len(wireIDs), maxListenTasks), nil)
			return
		}
	}
	honoured, err := d.readableTasks(r.Context(), caller, wireIDs)
	if err != nil {
		if r.Context().Err() == nil {
			d.Log.Error("subscriptions/listen: read the subscribed runs", zap.Error(err))
		}
		fail(http.StatusInternalServerError, wire.CodeInternalError, "internal error", nil)
		return
	}

	// The followers stop when the client leaves or the mount closes its
	// subscriptions (at shutdown); in the latter case the stream ends with
	// the listen result.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(d.listening, cancel)()

	st := &listenStream{sse: wire.NewEventStream(w), id: msg.ID}
	st.sse.Open()
	ack := map[string]any{}
	if subscribed {
		ids := make([]string, 0, len(honoured))
		for _, h := range honoured {
			ids = append(ids, h.wire)
		}
		ack["taskIds"] = ids
	}
	st.notify(methods.SubscriptionsAcknowledged, map[string]any{"notifications": ack})
	st.sse.KeepAlive(d.KeepAlive)
	defer st.sse.Stop()

	var wg sync.WaitGroup
	for _, h := range honoured {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.followTask(ctx, st, caller, h.runID)
		}()
	}
	wg.Wait()
	if r.Context().Err() == nil {
		// Every subscribed task is terminal, or the server is shutting
		// down: end the subscription.
		st.send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{
			"resultType": wire.ResultComplete, "_meta": map[string]any{metaSubscriptionID: msg.ID}}})
	}
}

// subscribedTask is a task id a listen honours.
type subscribedTask struct {
	wire  string // as the client named it
	runID string
}

// readableTasks returns, once each and in the order given, the ids of wire
// that name a run the caller may read. Ids that do not (malformed, unknown,
// another tenant's) are dropped alike.
func (d *Dialect) readableTasks(ctx context.Context, caller signals.Subject, wire []string) ([]subscribedTask, error) {
	seen := map[string]bool{}
	var out []subscribedTask
	for _, w := range wire {
		id, err := runid.Parse(w)
		if err != nil || seen[id] {
			continue
		}
		seen[id] = true
		ok, err := d.Core.Tasks().Readable(ctx, caller, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		out = append(out, subscribedTask{wire: w, runID: id})
	}
	return out, nil
}

// followTask sends the task's state on st now and each time its status,
// status message (the current step's name and counts, which the run
// reports as its progress) or open input requests change, until the run
// is terminal or ctx ends.
func (d *Dialect) followTask(ctx context.Context, st *listenStream, caller signals.Subject, runID string) {
	last := ""
	observe := func(s signals.Snapshot) bool {
		task := d.Projector.DetailedTask(s, caller)
		keys := make([]string, 0, len(task.InputRequests))
		for k := range task.InputRequests {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if state := task.Status + "|" + task.StatusMessage + "|" + strings.Join(keys, ","); state != last {
			last = state
			st.notify(methods.Tasks, taskNotification{Task: task.Task, InputRequests: task.InputRequests,
				Result: task.Result, Error: task.Error})
		}
		return s.Status.Terminal()
	}
	snap, err := d.Core.Tasks().Follow(ctx, caller, runID, observe)
	switch {
	case err == nil:
		observe(snap) // the state read once the history ended
	case ctx.Err() != nil:
	default:
		d.Core.RunLog(ctx, runID, "").Warn("subscriptions/listen: following a run failed; no more notifications for it",
			zap.Error(err))
	}
}

// listenStream writes the messages of one listen request on its SSE
// stream, each tagged with the subscription id.
type listenStream struct {
	sse *wire.EventStream
	id  json.RawMessage
}

// notify sends a notification whose params get the subscription id.
func (s *listenStream) notify(method string, params any) {
	switch p := params.(type) {
	case map[string]any:
		p["_meta"] = map[string]any{metaSubscriptionID: s.id}
	case taskNotification:
		p.Meta = map[string]any{metaSubscriptionID: s.id}
		params = p
	}
	s.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// send writes one message as an SSE event.
func (s *listenStream) send(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		return
	}
	s.sse.Event(b)
}
