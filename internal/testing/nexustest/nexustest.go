// Package nexustest is the caller's side of the tests of the tools' Nexus
// service (internal/nexusfront): a second namespace on the embedded
// Temporal server with a worker of a workflow that calls a tool as a
// Nexus operation, and the endpoint that targets the service's worker.
package nexustest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	nexuspb "go.temporal.io/api/nexus/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
)

// QueryToken is the query CallTool answers with its operation's token
// once the operation started ("" before).
const QueryToken = "token"

// CallTool is the caller's workflow: it calls op of service through
// endpoint with args and returns the operation's result, the run's record.
func CallTool(ctx workflow.Context, endpoint, service, op string, args map[string]any) (signals.RunRecord, error) {
	token := ""
	if err := workflow.SetQueryHandler(ctx, QueryToken, func() (string, error) { return token, nil }); err != nil {
		return signals.RunRecord{}, err
	}
	fut := workflow.NewNexusClient(endpoint, service).ExecuteOperation(ctx, op, args, workflow.NexusOperationOptions{})
	var exec workflow.NexusOperationExecution
	if err := fut.GetNexusOperationExecution().Get(ctx, &exec); err != nil {
		return signals.RunRecord{}, err
	}
	token = exec.OperationToken
	var rec signals.RunRecord
	err := fut.Get(ctx, &rec)
	return rec, err
}

// Callers is a namespace of callers: a client of it and a worker of
// CallTool on TaskQueue.
type Callers struct {
	Namespace string
	Client    client.Client
	TaskQueue string
}

// NewCallers registers a new namespace on env's server and runs a worker
// of CallTool in it.
func NewCallers(t testing.TB, env *testenv.Env) *Callers {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := testenv.UniqueID("callers-")
	if _, err := env.Client.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: env.Address, Namespace: ns, Logger: devtemporal.SDKLogger(env.Logger)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// The frontend learns of the new namespace within its refresh.
	for {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	tq := testenv.UniqueTaskQueue(t)
	w := worker.New(c, tq, worker.Options{})
	w.RegisterWorkflow(CallTool)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &Callers{Namespace: ns, Client: c, TaskQueue: tq}
}

// Call starts CallTool calling op of service through endpoint.
func (cs *Callers) Call(t testing.TB, ctx context.Context, endpoint, service, op string, args map[string]any) client.WorkflowRun {
	t.Helper()
	run, err := cs.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "caller-" + uuid.NewString(), TaskQueue: cs.TaskQueue},
		CallTool, endpoint, service, op, args)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// RunOf waits until the operation of the caller run started and returns
// the run id its token names.
func (cs *Callers) RunOf(t testing.TB, ctx context.Context, run client.WorkflowRun) string {
	t.Helper()
	for {
		v, err := cs.Client.QueryWorkflow(ctx, run.GetID(), "", QueryToken)
		var token string
		if err == nil {
			err = v.Get(&token)
		}
		if err == nil && token != "" {
			b, err := base64.RawURLEncoding.DecodeString(token)
			var tok struct {
				WorkflowID string `json:"wid"`
			}
			if err == nil {
				err = json.Unmarshal(b, &tok)
			}
			if err != nil {
				t.Fatalf("operation token %q: %v", token, err)
			}
			return tok.WorkflowID
		}
		if ctx.Err() != nil {
			t.Fatalf("operation of %s never started: %v", run.GetID(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// CreateEndpoint creates a Nexus endpoint that targets taskQueue of env's
// namespace and returns its name.
func CreateEndpoint(t testing.TB, env *testenv.Env, taskQueue string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := testenv.UniqueID("tools-")
	if _, err := env.Client.OperatorService().CreateNexusEndpoint(ctx, &operatorservice.CreateNexusEndpointRequest{Spec: &nexuspb.EndpointSpec{
		Name: name,
		Target: &nexuspb.EndpointTarget{Variant: &nexuspb.EndpointTarget_Worker_{Worker: &nexuspb.EndpointTarget_Worker{
			Namespace: env.Namespace, TaskQueue: taskQueue,
		}}},
	}}); err != nil {
		t.Fatal(err)
	}
	return name
}
