package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/signals"
)

// WorkerHeartbeatInterval is the worker heartbeat interval
// (client.Options.WorkerHeartbeatInterval) a worker's client should use
// for the catalog to see the worker gone within seconds: the stock
// commands use it. A worker heartbeating every d is judged dead 2d +
// HeartbeatSlack after its last heartbeat (docs/catalog.md#liveness).
const WorkerHeartbeatInterval = 3 * time.Second

// HeartbeatSlack is added to twice a worker's heartbeat interval to give
// how old its last heartbeat may be while it counts as live (never more
// than the live window).
const HeartbeatSlack = 2 * time.Second

// workerKey names one worker: its task queue and its identity.
type workerKey struct{ taskQueue, identity string }

// beat is the last heartbeat of one worker.
type beat struct {
	at       time.Time
	interval time.Duration // 0: not known yet (a first heartbeat)
	running  bool
	// publication is set for a Heartbeat of the worker's publication,
	// which outranks the SDK's own heartbeats of the worker.
	publication bool
}

// workerSigns is what Temporal knows of the workers of some task queues:
// their heartbeats (ListWorkers) and their workflow pollers
// (DescribeTaskQueue). A worker is judged by its own signs only.
type workerSigns struct {
	beats map[workerKey]beat
	polls map[string]pollers // by task queue
}

// live reports whether the worker identity serves taskQueue: by its last
// heartbeat when it sends them (a worker that stopped is not live at once;
// one that crashed once its heartbeat is older than twice its interval plus
// HeartbeatSlack, or than window), otherwise by its own pollers, seen
// within window.
func (l workerSigns) live(taskQueue, identity string, now time.Time, window time.Duration) bool {
	if b, ok := l.beats[workerKey{taskQueue, identity}]; ok {
		if !b.running {
			return false
		}
		if b.interval > 0 {
			return now.Sub(b.at) < min(2*b.interval+HeartbeatSlack, window)
		}
	}
	return l.polls[taskQueue].live(identity, now, window)
}

// anyLive reports whether any worker serves taskQueue, each judged as
// live judges it.
func (l workerSigns) anyLive(taskQueue string, now time.Time, window time.Duration) bool {
	for id := range l.polls[taskQueue] {
		if l.live(taskQueue, id, now, window) {
			return true
		}
	}
	for k := range l.beats {
		if k.taskQueue == taskQueue && l.live(taskQueue, k.identity, now, window) {
			return true
		}
	}
	return false
}

// workerSignsOf reads the heartbeats and pollers of the workers of queues.
func workerSignsOf(ctx context.Context, c client.Client, namespace string, queues map[string]bool) (workerSigns, error) {
	polls, err := pollersOf(ctx, c, queues)
	if err != nil {
		return workerSigns{}, err
	}
	beats, err := heartbeatsOf(ctx, c, namespace, queues)
	if err != nil {
		return workerSigns{}, err
	}
	return workerSigns{beats: beats, polls: polls}, nil
}

// heartbeatsOf lists the last heartbeat of each worker of queues (Temporal
// worker heartbeats; none when the server does not keep them). Of several
// heartbeats of one identity on one queue, a Heartbeat of its publication
// (sent every WorkerHeartbeatInterval whatever the client's interval)
// counts before the SDK's own, and of the same kind the newest (a
// restarted process) counts.
func heartbeatsOf(ctx context.Context, c client.Client, namespace string, queues map[string]bool) (map[workerKey]beat, error) {
	out := map[workerKey]beat{}
	var terms []string
	for q := range queues {
		if !strings.ContainsAny(q, `'"\`) {
			terms = append(terms, fmt.Sprintf("TaskQueue = '%s'", q))
		}
	}
	if len(terms) == 0 {
		return out, nil
	}
	req := &workflowservice.ListWorkersRequest{Namespace: namespace, PageSize: 1000, Query: strings.Join(terms, " OR ")}
	for {
		resp, err := c.WorkflowService().ListWorkers(ctx, req)
		var unimpl *serviceerror.Unimplemented
		var denied *serviceerror.PermissionDenied
		switch {
		case errors.As(err, &unimpl), errors.As(err, &denied):
			return out, nil // no heartbeats to read: pollers decide
		case err != nil:
			return nil, fmt.Errorf("list workers: %w", err)
		}
		//lint:ignore SA1019 WorkerListInfo, its successor, leaves out the heartbeat time and interval liveness is judged by; DescribeWorker would cost one call per worker.
		for _, info := range resp.GetWorkersInfo() {
			hb := info.GetWorkerHeartbeat()
			k := workerKey{hb.GetTaskQueue(), hb.GetWorkerIdentity()}
			b := beat{at: hb.GetHeartbeatTime().AsTime(), interval: hb.GetElapsedSinceLastHeartbeat().AsDuration(),
				running:     hb.GetStatus() == enumspb.WORKER_STATUS_RUNNING,
				publication: hb.GetWorkerInstanceKey() == signals.PublicationID(k.taskQueue, k.identity)}
			if old, ok := out[k]; !ok || b.publication && !old.publication || b.publication == old.publication && b.at.After(old.at) {
				out[k] = b
			}
		}
		if req.NextPageToken = resp.GetNextPageToken(); len(req.NextPageToken) == 0 {
			return out, nil
		}
	}
}
