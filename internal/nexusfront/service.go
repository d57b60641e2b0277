package nexusfront

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nexus-rpc/sdk-go/nexus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporalnexus"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// DefaultService is the Nexus service name when Options.Service is empty.
const DefaultService = "openwop-tools"

// Issuer is the issuer of the subjects of Nexus callers.
const Issuer = "nexus"

// Options configure NewService.
type Options struct {
	// Service is the Nexus service's name. Default DefaultService.
	Service string
	// Tenants maps a caller's namespace to the tenant its runs belong to.
	// A namespace not in it is refused.
	Tenants map[string]string
}

// front holds what the operations share.
type front struct {
	tools   catalog.Source
	backend runs.Backend
	tenants map[string]string
}

// NewService builds the Nexus service of the tools tools lists now: one
// asynchronous operation per tool, named after it, whose runs start and
// are cancelled through backend. Register it on a worker
// (worker.Worker.RegisterNexusService) of the task queue the Nexus
// endpoint targets.
func NewService(ctx context.Context, tools catalog.Source, backend runs.Backend, opts Options) (*nexus.Service, error) {
	list, err := tools.Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("nexusfront: list tools: %w", err)
	}
	f := &front{tools: tools, backend: backend, tenants: opts.Tenants}
	svc := nexus.NewService(cmp.Or(opts.Service, DefaultService))
	for _, t := range list {
		name := t.Name()
		op, err := temporalnexus.NewWorkflowRunOperationWithOptions(temporalnexus.WorkflowRunOperationOptions[json.RawMessage, json.RawMessage]{
			Name: name,
			Handler: func(ctx context.Context, args json.RawMessage, o nexus.StartOperationOptions) (temporalnexus.WorkflowHandle[json.RawMessage], error) {
				return f.start(ctx, name, args, o)
			},
		})
		if err != nil {
			return nil, fmt.Errorf("nexusfront: operation %q: %w", name, err)
		}
		if err := svc.Register(operation{Operation: op, f: f}); err != nil {
			return nil, fmt.Errorf("nexusfront: operation %q: %w", name, err)
		}
	}
	return svc, nil
}

// operation is a tool's operation: the SDK's workflow run operation, with
// the cancel going through the run service.
type operation struct {
	nexus.Operation[json.RawMessage, json.RawMessage]
	f *front
}

// Cancel cancels the run the operation started.
func (o operation) Cancel(ctx context.Context, token string, _ nexus.CancelOperationOptions) error {
	return o.f.cancel(ctx, token)
}

// start starts the run of tool for the caller the request's links name.
func (f *front) start(ctx context.Context, name string, args json.RawMessage, o nexus.StartOperationOptions) (temporalnexus.WorkflowHandle[json.RawMessage], error) {
	caller, err := f.caller(o.Links)
	if err != nil {
		return nil, err
	}
	tool, err := f.tools.ForCall(ctx, name)
	if err != nil {
		return nil, lookupError(name, err)
	}
	if n := len(tool.Spec().PreRunInputs); n > 0 {
		// The run would start without the answers its workflow reads.
		return nil, nexus.NewHandlerErrorf(nexus.HandlerErrorTypeBadRequest,
			"tool %q asks %d pre-run input(s) before its run starts, which a Nexus call cannot answer: call it over MCP or REST", name, n)
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	args, err = tool.ValidateArguments(args)
	if err != nil {
		return nil, nexus.NewHandlerErrorf(nexus.HandlerErrorTypeBadRequest, "tool %q: arguments: %s", name, catalog.Problem(err))
	}
	if !runs.ValidIdempotencyKey(o.RequestID) {
		return nil, nexus.NewHandlerErrorf(nexus.HandlerErrorTypeBadRequest, "request id %q cannot key a run", o.RequestID)
	}
	var handle temporalnexus.WorkflowHandle[json.RawMessage]
	launch := func(ctx context.Context, opts client.StartWorkflowOptions, workflowType string, input any) (string, error) {
		h, err := temporalnexus.ExecuteUntypedWorkflow[json.RawMessage](ctx, o, opts, workflowType, input)
		if err != nil {
			return "", err
		}
		handle = h
		return h.RunID(), nil
	}
	snap, err := f.backend.Start(ctx, runs.NewRun{
		Tool: tool.Spec(), Arguments: args, Caller: caller, Transport: signals.TransportNexus,
		Version: tool.Pinned(), IdempotencyKey: o.RequestID, Launch: launch,
	})
	if err != nil {
		if errors.Is(err, runs.ErrKeyReused) {
			return nil, nexus.NewHandlerErrorf(nexus.HandlerErrorTypeBadRequest, "%v", err)
		}
		return nil, fmt.Errorf("nexusfront: start tool %q: %w", name, err)
	}
	f.backend.Release(snap.RunID)
	if handle == nil {
		// The run of this request id was started before, and not by
		// this handler's launch: the caller would never hear of it.
		return nil, nexus.NewHandlerErrorf(nexus.HandlerErrorTypeInternal, "run %s of request %q exists without this operation's callback", snap.RunID, o.RequestID)
	}
	return handle, nil
}

// caller is the subject of the caller the links name: the namespace of
// the caller's workflow, mapped to a tenant.
func (f *front) caller(links []nexus.Link) (signals.Subject, error) {
	ns := ""
	for _, l := range links {
		if ev, err := temporalnexus.ConvertNexusLinkToLinkWorkflowEvent(l); err == nil && ev.GetNamespace() != "" {
			ns = ev.GetNamespace()
			break
		}
	}
	if ns == "" {
		return signals.Subject{}, nexus.NewHandlerErrorf(nexus.HandlerErrorTypeUnauthorized, "the request names no caller namespace (no link to a caller workflow)")
	}
	tenant, ok := f.tenants[ns]
	if !ok || tenant == "" {
		return signals.Subject{}, nexus.NewHandlerErrorf(nexus.HandlerErrorTypeUnauthorized, "caller namespace %q is not mapped to a tenant", ns)
	}
	return signals.Subject{Issuer: Issuer, SubjectID: Subject(ns), Tenant: tenant}, nil
}

// Subject is the subject id of the callers of namespace ns.
func Subject(ns string) string { return "nexus:" + ns }

// cancel cancels the run of the operation token.
func (f *front) cancel(ctx context.Context, token string) error {
	id, err := tokenRun(token)
	if err != nil {
		return &nexus.HandlerError{Type: nexus.HandlerErrorTypeBadRequest, Message: "invalid operation token", Cause: err}
	}
	tenant := runid.Tenant(id)
	if !f.mapped(tenant) {
		return nexus.NewHandlerErrorf(nexus.HandlerErrorTypeUnauthorized, "run %s is not of a tenant Nexus callers map to", id)
	}
	caller := signals.Subject{Issuer: Issuer, SubjectID: Issuer, Tenant: tenant}
	_, err = f.backend.Cancel(ctx, caller, id, "")
	switch {
	case err == nil, errors.Is(err, runs.ErrTerminal):
		return nil
	case errors.Is(err, runs.ErrNotFound):
		return nexus.NewHandlerErrorf(nexus.HandlerErrorTypeNotFound, "run %s not found", id)
	}
	return fmt.Errorf("nexusfront: cancel run %s: %w", id, err)
}

// mapped reports whether some caller namespace maps to tenant.
func (f *front) mapped(tenant string) bool {
	for _, t := range f.tenants {
		if t == tenant {
			return true
		}
	}
	return false
}

// tokenRun is the run id (the workflow ID) of a workflow run operation
// token: the SDK's, base64url JSON with the workflow ID under "wid".
func tokenRun(token string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", err
	}
	var t struct {
		WorkflowID string `json:"wid"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return "", err
	}
	if !runid.Valid(t.WorkflowID) {
		return "", fmt.Errorf("workflow ID %q is not a run id", t.WorkflowID)
	}
	return t.WorkflowID, nil
}

// lookupError is the handler error of a tool the catalog did not give.
func lookupError(name string, err error) error {
	var unavailable *catalog.UnavailableError
	switch {
	case errors.Is(err, catalog.ErrUnknownTool):
		return nexus.NewHandlerErrorf(nexus.HandlerErrorTypeNotFound, "unknown tool %q", name)
	case errors.As(err, &unavailable):
		return &nexus.HandlerError{Type: nexus.HandlerErrorTypeUnavailable, Message: unavailable.Error(), Cause: err}
	}
	return fmt.Errorf("nexusfront: tool %q: %w", name, err)
}
