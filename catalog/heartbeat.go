package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	deploymentpb "go.temporal.io/api/deployment/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workerpb "go.temporal.io/api/worker/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/openwop/temporal-mcp/signals"
)

// Heartbeat is one sign of life of a publishing worker, sent by the worker
// itself every WorkerHeartbeatInterval (workflows.Registry.Run does it)
// whatever its client's own worker heartbeat interval: it is a Temporal
// worker heartbeat whose worker instance key is the publication's
// workflow ID (signals.PublicationID), and the catalog judges a worker
// that sends such heartbeats by them alone (docs/catalog.md#liveness).
type Heartbeat struct {
	// Namespace is the namespace of the client (ClientNamespace tells it).
	Namespace string
	// Publication is the worker's publication: its task queue and identity
	// name the worker.
	Publication signals.Publication
	// Interval is how often the worker sends them (WorkerHeartbeatInterval
	// when zero); the catalog judges the worker dead 2 Intervals +
	// HeartbeatSlack after the last one.
	Interval time.Duration
	// Started is when the worker started (now when zero).
	Started time.Time
}

// Send records one heartbeat: running, or, when stopping is set, that the
// worker is shutting down, which the catalog takes as gone at once.
func (h Heartbeat) Send(ctx context.Context, c client.Client, stopping bool) error {
	pub := h.Publication
	if pub.TaskQueue == "" || pub.Identity == "" || h.Namespace == "" {
		return errors.New("catalog heartbeat: the namespace, task queue and worker identity are required")
	}
	interval := h.Interval
	if interval <= 0 {
		interval = WorkerHeartbeatInterval
	}
	started := h.Started
	if started.IsZero() {
		started = time.Now()
	}
	status := enumspb.WORKER_STATUS_RUNNING
	if stopping {
		status = enumspb.WORKER_STATUS_SHUTTING_DOWN
	}
	host, _ := os.Hostname()
	var version *deploymentpb.WorkerDeploymentVersion
	if v := pub.Version; v != nil {
		version = &deploymentpb.WorkerDeploymentVersion{DeploymentName: v.DeploymentName, BuildId: v.BuildID}
	}
	_, err := c.WorkflowService().RecordWorkerHeartbeat(ctx, &workflowservice.RecordWorkerHeartbeatRequest{
		Namespace: h.Namespace,
		Identity:  pub.Identity,
		WorkerHeartbeat: []*workerpb.WorkerHeartbeat{{
			WorkerInstanceKey:         signals.PublicationID(pub.TaskQueue, pub.Identity),
			WorkerIdentity:            pub.Identity,
			TaskQueue:                 pub.TaskQueue,
			DeploymentVersion:         version,
			HostInfo:                  &workerpb.WorkerHostInfo{HostName: host, ProcessId: strconv.Itoa(os.Getpid())},
			Status:                    status,
			StartTime:                 timestamppb.New(started),
			HeartbeatTime:             timestamppb.Now(),
			ElapsedSinceLastHeartbeat: durationpb.New(interval),
		}},
	})
	if err != nil {
		return fmt.Errorf("catalog heartbeat of worker %q on task queue %q: %w", pub.Identity, pub.TaskQueue, err)
	}
	return nil
}

// ClientNamespace returns the namespace c works in. The SDK fills the
// client's namespace into a visibility request that names none, so this
// asks for a count of the publications of no worker and reads it there.
func ClientNamespace(ctx context.Context, c client.Client) (string, error) {
	req := &workflowservice.CountWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowType = '%s' AND WorkflowId = ''", signals.PublicationWorkflowType),
	}
	if _, err := c.CountWorkflow(ctx, req); err != nil {
		return "", fmt.Errorf("find the client's namespace: %w", err)
	}
	if req.GetNamespace() == "" {
		return "", errors.New("find the client's namespace: the client did not name it; set it explicitly")
	}
	return req.GetNamespace(), nil
}
