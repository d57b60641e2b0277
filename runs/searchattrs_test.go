package runs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// deniedOperator refuses AddSearchAttributes, and ListSearchAttributes too
// when denyList, as Temporal Cloud does without admin rights.
type deniedOperator struct {
	operatorservice.OperatorServiceClient
	denyList bool
}

func (d deniedOperator) AddSearchAttributes(context.Context, *operatorservice.AddSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.AddSearchAttributesResponse, error) {
	return nil, serviceerror.NewPermissionDenied("Request unauthorized.", "")
}

func (d deniedOperator) ListSearchAttributes(ctx context.Context, req *operatorservice.ListSearchAttributesRequest, opts ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	if d.denyList {
		return nil, serviceerror.NewPermissionDenied("Request unauthorized.", "")
	}
	return d.OperatorServiceClient.ListSearchAttributes(ctx, req, opts...)
}

// deniedClient is a client whose operator API is a deniedOperator.
type deniedClient struct {
	client.Client
	denyList bool
}

func (c deniedClient) OperatorService() operatorservice.OperatorServiceClient {
	return deniedOperator{OperatorServiceClient: c.Client.OperatorService(), denyList: c.denyList}
}

// freshNamespace registers a namespace without the OpenWOP search
// attributes on the shared test server and returns a client on it.
func freshNamespace(ctx context.Context, t *testing.T) (string, client.Client) {
	t.Helper()
	env := testenv.Temporal(t)
	ns := testenv.UniqueID("openwop-sa-")
	if _, err := env.Client.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        ns,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	}); err != nil {
		t.Fatalf("register namespace %s: %v", ns, err)
	}
	c, err := client.NewClientFromExisting(env.Client, client.Options{Namespace: ns})
	if err != nil {
		t.Fatalf("client on %s: %v", ns, err)
	}
	t.Cleanup(c.Close)
	return ns, c
}

// retry calls f until it returns nil or an error that is not a namespace
// still unknown to the frontend (its namespace cache refreshes every few
// seconds), for at most 30 s.
func retry(ctx context.Context, t *testing.T, f func() error) error {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		var nf *serviceerror.NamespaceNotFound
		if !errors.As(err, &nf) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestSearchAttributesMissing: on a namespace without the run search
// attributes, Start and List fail with ErrSearchAttributesMissing naming
// all four and the commands that create them; EnsureSearchAttributes
// reports them where the operator API is refused and adds them where it is
// allowed, after which runs start.
func TestSearchAttributesMissing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns, c := freshNamespace(ctx, t)
	svc := runs.New(c, testenv.Logger(), runs.Options{Namespace: ns, TaskQueue: testenv.UniqueTaskQueue(t)})
	caller := signals.Subject{Issuer: "test", SubjectID: "urn:test:alice", Tenant: "acme"}
	// A plain tool: Start returns once the workflow exists (no worker needed).
	req := runs.NewRun{
		Tool:      signals.ToolSpec{Name: "plain_tool", Contract: signals.ContractPlain},
		Arguments: []byte(`{"x":1}`), Caller: caller, Transport: signals.TransportMCP,
	}

	wantMissing := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, runs.ErrSearchAttributesMissing) {
			t.Fatalf("%s = %v, want ErrSearchAttributesMissing", what, err)
		}
		var missing *runs.MissingSearchAttributesError
		if !errors.As(err, &missing) || missing.Namespace != ns ||
			strings.Join(missing.Names, ",") != strings.Join(signals.SearchAttributes, ",") {
			t.Fatalf("%s = %#v, want all of %v missing in %s", what, missing, signals.SearchAttributes, ns)
		}
		msg := err.Error()
		for _, want := range []string{
			"temporal operator search-attribute create --namespace " + ns + " --name OpenWOPTenant --type Keyword",
			`tcld namespace search-attributes add -n ` + ns + ` --sa "OpenWOPTenant=Keyword"`,
			"OpenWOPStatus",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s message lacks %q:\n%s", what, want, msg)
			}
		}
	}

	err := retry(ctx, t, func() error { _, err := svc.Start(ctx, req); return err })
	wantMissing("Start", err)
	_, err = svc.List(ctx, caller, runs.ListRequest{})
	wantMissing("List", err)

	// Temporal Cloud without admin rights: nothing is added, and the error
	// says what is missing, whether or not the listing is allowed.
	for _, denyList := range []bool{false, true} {
		err := runs.EnsureSearchAttributes(ctx, deniedClient{Client: c, denyList: denyList}, ns)
		wantMissing("EnsureSearchAttributes with the operator API refused", err)
		if !strings.Contains(errors.Unwrap(err).Error(), "unauthorized") {
			t.Errorf("cause = %v, want the refusal", errors.Unwrap(err))
		}
	}

	// Where it is allowed, EnsureSearchAttributes adds them, idempotently.
	for range 2 {
		if err := runs.EnsureSearchAttributes(ctx, c, ns); err != nil {
			t.Fatalf("EnsureSearchAttributes: %v", err)
		}
	}
	err = retry(ctx, t, func() error {
		deadline := time.Now().Add(20 * time.Second)
		for {
			// The frontend may still see the namespace without them.
			_, err := svc.Start(ctx, req)
			if !errors.Is(err, runs.ErrSearchAttributesMissing) || time.Now().After(deadline) {
				return err
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	if err != nil {
		t.Fatalf("Start after EnsureSearchAttributes: %v", err)
	}
	if _, err := svc.List(ctx, caller, runs.ListRequest{}); err != nil {
		t.Fatalf("List after EnsureSearchAttributes: %v", err)
	}
	if err := runs.EnsureSearchAttributes(ctx, deniedClient{Client: c, denyList: true}, ns); err != nil {
		t.Fatalf("EnsureSearchAttributes with the attributes present and the operator API refused: %v", err)
	}
}
