package nexusfront

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nexus-rpc/sdk-go/nexus"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/temporalnexus"
	"go.temporal.io/sdk/worker"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/nexustest"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// nexusEnv is namespace A (the tools, the service's worker, the run
// service), a namespace of callers mapped to tenant acme, and the
// endpoint.
type nexusEnv struct {
	env      *testenv.Env
	svc      *runs.Service
	callers  *nexustest.Callers
	endpoint string
}

func setup(t *testing.T) nexusEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := testenv.Temporal(t)
	// The tools' worker, and the catalog of its tools.
	toolTQ := testenv.UniqueTaskQueue(t)
	reg, err := conformancetools.Registry(tools.NewActivities(env.Logger, tools.ActivityOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	env.NewWorker(t, toolTQ, reg.Register)
	specs := reg.Specs()
	for i := range specs {
		specs[i].TaskQueue = toolTQ
	}
	cat, err := catalog.NewStatic(specs...)
	if err != nil {
		t.Fatal(err)
	}
	svc := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: toolTQ, Namespace: env.Namespace})

	callers := nexustest.NewCallers(t, env)
	service, err := NewService(ctx, cat, svc, Options{Tenants: map[string]string{callers.Namespace: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	nexusTQ := testenv.UniqueTaskQueue(t)
	env.NewWorker(t, nexusTQ, func(r worker.Registry) { r.RegisterNexusService(service) })
	return nexusEnv{env: env, svc: svc, callers: callers, endpoint: nexustest.CreateEndpoint(t, env, nexusTQ)}
}

func (e nexusEnv) call(t *testing.T, ctx context.Context, op string, args map[string]any) client.WorkflowRun {
	t.Helper()
	return e.callers.Call(t, ctx, e.endpoint, DefaultService, op, args)
}

// TestNexusCallCompletesAndCancels: a workflow of another namespace calls
// delay through the endpoint and gets the run's result; the run is one
// of tenant acme owned by nexus:<namespace>, started over transport nexus;
// cancelling a caller cancels its run.
func TestNexusCallCompletesAndCancels(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var rec signals.RunRecord
	if err := e.call(t, ctx, "delay", map[string]any{"delayMs": 10}).Get(ctx, &rec); err != nil {
		t.Fatalf("caller: %v", err)
	}
	snap := rec.Snapshot
	if snap.Status != signals.StatusCompleted || snap.Result == nil || string(snap.Result.StructuredContent) != `{"sleptMs":10}` {
		t.Fatalf("run record = %+v, want completed with sleptMs 10", snap)
	}
	if snap.Owner.Tenant != "acme" || snap.Owner.Subject.Issuer != Issuer || snap.Transport != signals.TransportNexus {
		t.Fatalf("run owner %+v via %q, want tenant acme, issuer nexus, transport nexus", snap.Owner, snap.Transport)
	}

	// A long call, cancelled by cancelling its caller.
	run := e.call(t, ctx, "delay", map[string]any{"delayMs": 600_000})
	runID := e.callers.RunOf(t, ctx, run)
	if err := e.callers.Client.CancelWorkflow(ctx, run.GetID(), ""); err != nil {
		t.Fatal(err)
	}
	caller := signals.Subject{Issuer: Issuer, SubjectID: Issuer, Tenant: "acme"}
	got, err := e.svc.Await(ctx, caller, runID, func(s signals.Snapshot) bool { return s.Status.Terminal() })
	if err != nil {
		t.Fatal(err)
	}
	// Cancelled through the run service: with the reason recorded.
	if got.Status != signals.StatusCancelled || got.CancelReason != signals.ReasonCallerRequested {
		t.Fatalf("run %s status = %s (reason %q), want cancelled (%s)", runID, got.Status, got.CancelReason, signals.ReasonCallerRequested)
	}
	var canceled *temporal.CanceledError
	if err := run.Get(ctx, nil); !errors.As(err, &canceled) {
		t.Fatalf("caller ended with %v, want cancelled", err)
	}
}

// TestNexusUnmappedNamespace: a workflow of a namespace the service does
// not map is refused: its operation fails with the handler's
// UNAUTHORIZED error naming the namespace.
func TestNexusUnmappedNamespace(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stranger := nexustest.NewCallers(t, e.env)
	err := stranger.Call(t, ctx, e.endpoint, DefaultService, "delay", map[string]any{"delayMs": 10}).Get(ctx, nil)
	var he *nexus.HandlerError
	if !errors.As(err, &he) || he.Type != nexus.HandlerErrorTypeUnauthorized || !strings.Contains(err.Error(), stranger.Namespace) {
		t.Fatalf("caller of unmapped namespace %s ended with %v, want UNAUTHORIZED naming it", stranger.Namespace, err)
	}
}

// TestNexusUnmappedCaller: a namespace not mapped to a tenant is refused
// with UNAUTHORIZED, and no run starts.
func TestNexusUnmappedCaller(t *testing.T) {
	f := &front{tenants: map[string]string{"team-a": "acme"}}
	for _, tc := range []struct {
		name  string
		links []nexus.Link
	}{
		{"no link", nil},
		{"unmapped", []nexus.Link{workflowLink(t, "team-b")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.caller(tc.links)
			var he *nexus.HandlerError
			if !errors.As(err, &he) || he.Type != nexus.HandlerErrorTypeUnauthorized {
				t.Fatalf("caller(%v) = %v, want UNAUTHORIZED", tc.links, err)
			}
		})
	}
	got, err := f.caller([]nexus.Link{workflowLink(t, "team-a")})
	if err != nil || got.Tenant != "acme" || got.SubjectID != "nexus:team-a" {
		t.Fatalf("caller(team-a) = %+v, %v; want tenant acme, subject nexus:team-a", got, err)
	}
}

// workflowLink is the link Temporal sends with a start: to the caller's
// workflow in namespace ns.
func workflowLink(t *testing.T, ns string) nexus.Link {
	t.Helper()
	return temporalnexus.ConvertLinkWorkflowEventToNexusLink(&commonpb.Link_WorkflowEvent{
		Namespace: ns, WorkflowId: "caller", RunId: uuid.NewString(),
		Reference: &commonpb.Link_WorkflowEvent_EventRef{EventRef: &commonpb.Link_WorkflowEvent_EventReference{
			EventId: 5, EventType: enumspb.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED,
		}},
	})
}

// TestNexusRefusals: what start refuses before any run starts, each with
// its handler error type and a message naming the problem.
func TestNexusRefusals(t *testing.T) {
	cat, err := catalog.NewStatic(
		signals.ToolSpec{Name: "greet", Description: "Greet.", InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		signals.ToolSpec{Name: "confirm_first", Description: "Confirm, then act.", PreRunInputs: []signals.PreRunInput{{Key: "ok", Message: "Go ahead?",
			Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	// No backend: a refusal never reaches it.
	f := &front{tools: cat, tenants: map[string]string{"team-a": "acme"}}
	mapped := nexus.StartOperationOptions{Links: []nexus.Link{workflowLink(t, "team-a")}, RequestID: uuid.NewString()}
	for _, tc := range []struct {
		name, tool, args string
		opts             nexus.StartOperationOptions
		want             nexus.HandlerErrorType
		says             string
	}{
		{"unmapped namespace", "greet", `{"name":"ada"}`, nexus.StartOperationOptions{Links: []nexus.Link{workflowLink(t, "team-x")}}, nexus.HandlerErrorTypeUnauthorized, `"team-x" is not mapped`},
		{"unknown tool", "nope", `{}`, mapped, nexus.HandlerErrorTypeNotFound, `unknown tool "nope"`},
		{"invalid arguments", "greet", `{"name":1}`, mapped, nexus.HandlerErrorTypeBadRequest, `tool "greet": arguments`},
		{"pre-run inputs", "confirm_first", `{}`, mapped, nexus.HandlerErrorTypeBadRequest, "pre-run input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.start(context.Background(), tc.tool, json.RawMessage(tc.args), tc.opts)
			var he *nexus.HandlerError
			if !errors.As(err, &he) || he.Type != tc.want || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("start = %v, want %s saying %q", err, tc.want, tc.says)
			}
		})
	}
}

// switchable is a catalog whose tools a test replaces.
type switchable struct {
	catalog.Source
	mu  sync.Mutex
	now catalog.Source
}

func (s *switchable) set(src catalog.Source) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = src
}

func (s *switchable) get() catalog.Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *switchable) Tools(ctx context.Context) ([]*catalog.Tool, error) { return s.get().Tools(ctx) }
func (s *switchable) Lookup(ctx context.Context, name string) (*catalog.Tool, error) {
	return s.get().Lookup(ctx, name)
}
func (s *switchable) ForCall(ctx context.Context, name string) (*catalog.Tool, error) {
	return s.get().ForCall(ctx, name)
}
func (s *switchable) OtherVersions(name string) []*catalog.Tool { return s.get().OtherVersions(name) }

// TestNexusFollowsTheCatalog: Serve's operations are the catalog's tools
// of now: a tool published after the service started is called through
// the endpoint once Serve rechecked, and a withdrawn one is no operation.
func TestNexusFollowsTheCatalog(t *testing.T) {
	env := testenv.Temporal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	toolTQ := testenv.UniqueTaskQueue(t)
	reg, err := conformancetools.Registry(tools.NewActivities(env.Logger, tools.ActivityOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	env.NewWorker(t, toolTQ, reg.Register)
	specs := reg.Specs()
	for i := range specs {
		specs[i].TaskQueue = toolTQ
	}
	without := slices.DeleteFunc(slices.Clone(specs), func(s signals.ToolSpec) bool { return s.Name == "delay" })
	before, err := catalog.NewStatic(without...)
	if err != nil {
		t.Fatal(err)
	}
	after, err := catalog.NewStatic(specs...)
	if err != nil {
		t.Fatal(err)
	}
	cat := &switchable{now: before}
	svc := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: toolTQ, Namespace: env.Namespace})
	callers := nexustest.NewCallers(t, env)
	nexusTQ := testenv.UniqueTaskQueue(t)
	served := make(chan error, 1)
	sctx, stop := context.WithCancel(ctx)
	go func() {
		served <- Serve(sctx, env.Client, cat, svc, ServeOptions{Options: Options{Tenants: map[string]string{callers.Namespace: "acme"}},
			TaskQueue: nexusTQ, Recheck: 100 * time.Millisecond, Logger: env.Logger})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	endpoint := nexustest.CreateEndpoint(t, env, nexusTQ)

	// Before delay is published, calling it fails (no such operation).
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	err = callers.Call(t, cctx, endpoint, DefaultService, "delay", map[string]any{"delayMs": 10}).Get(cctx, nil)
	ccancel()
	if err == nil {
		t.Fatal("delay was called before it was published")
	}

	// Once published, it is called within a recheck or so: a call that
	// reached the worker being replaced fails, and is made again.
	cat.set(after)
	deadline := time.Now().Add(time.Minute)
	for {
		var rec signals.RunRecord
		err := callers.Call(t, ctx, endpoint, DefaultService, "delay", map[string]any{"delayMs": 10}).Get(ctx, &rec)
		if err == nil && rec.Snapshot.Status == signals.StatusCompleted {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("delay once published: %v, run %+v; want completed", err, rec.Snapshot)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
