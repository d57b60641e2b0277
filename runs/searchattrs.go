package runs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"

	"github.com/openwop/temporal-mcp/signals"
)

// ErrSearchAttributesMissing is matched (errors.Is) by the errors of Start,
// List and EnsureSearchAttributes when the namespace lacks the run search
// attributes (signals.SearchAttributes). The error's message names the
// missing attributes and the commands that create them; it is safe to show
// to callers.
var ErrSearchAttributesMissing = errors.New("the namespace lacks the OpenWOP search attributes")

// MissingSearchAttributesError reports run search attributes a namespace
// lacks. It matches ErrSearchAttributesMissing.
type MissingSearchAttributesError struct {
	// Namespace is the Temporal namespace.
	Namespace string
	// Names are the missing attributes (all of type Keyword).
	Names []string
	// Err is what Temporal answered (nil when unknown): the refused
	// registration, or the refused start or listing.
	Err error
}

// Error names the missing attributes and the commands that create them.
func (e *MissingSearchAttributesError) Error() string {
	return fmt.Sprintf("the Temporal namespace %q lacks the Keyword search attribute(s) %s that OpenWOP runs need; "+
		"create them with `%s` (self-hosted Temporal) or `%s` (Temporal Cloud)",
		e.Namespace, strings.Join(e.Names, ", "), e.CreateCommand(), e.CloudCommand())
}

// Is reports whether target is ErrSearchAttributesMissing.
func (e *MissingSearchAttributesError) Is(target error) bool {
	return target == ErrSearchAttributesMissing
}

// Unwrap returns what Temporal answered.
func (e *MissingSearchAttributesError) Unwrap() error { return e.Err }

// CreateCommand is the Temporal CLI command that creates the missing
// attributes on a self-hosted server.
func (e *MissingSearchAttributesError) CreateCommand() string {
	return e.command("temporal operator search-attribute create --namespace %s", " --name %s --type Keyword")
}

// CloudCommand is the tcld command that adds the missing attributes on
// Temporal Cloud.
func (e *MissingSearchAttributesError) CloudCommand() string {
	return e.command("tcld namespace search-attributes add -n %s", ` --sa "%s=Keyword"`)
}

// command is a CLI command: head formatted with the namespace, then each
// missing attribute's name formatted with each.
func (e *MissingSearchAttributesError) command(head, each string) string {
	var b strings.Builder
	fmt.Fprintf(&b, head, e.Namespace)
	for _, name := range e.Names {
		fmt.Fprintf(&b, each, name)
	}
	return b.String()
}

// EnsureSearchAttributes makes sure namespace has the run search attributes
// (signals.SearchAttributes, all Keyword), adding the missing ones through
// the operator API. It is idempotent.
//
// Where the operator API is refused (Temporal Cloud without admin rights) it
// finds which attributes are missing, with the operator API's listing or
// else with visibility queries, and returns a *MissingSearchAttributesError
// naming them and the commands that create them. Other failures (Temporal
// unreachable) are returned wrapped.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	namespace = cmp.Or(namespace, DefaultNamespace)
	missing, err := missingSearchAttributes(ctx, c, namespace)
	if err != nil {
		return fmt.Errorf("check the search attributes of namespace %q: %w", namespace, err)
	}
	if len(missing) == 0 {
		return nil
	}
	add := make(map[string]enumspb.IndexedValueType, len(missing))
	for _, name := range missing {
		add[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: add,
	})
	var exists *serviceerror.AlreadyExists
	if err == nil || errors.As(err, &exists) {
		return nil
	}
	return &MissingSearchAttributesError{Namespace: namespace, Names: missing, Err: err}
}

// missingSearchAttributes lists the run search attributes namespace lacks,
// in the order of signals.SearchAttributes. It reads the operator API's
// listing, or, where that is refused, asks visibility about each attribute.
func missingSearchAttributes(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err == nil {
		var missing []string
		for _, name := range signals.SearchAttributes {
			t, ok := resp.GetCustomAttributes()[name]
			switch {
			case !ok:
				missing = append(missing, name)
			case t != enumspb.INDEXED_VALUE_TYPE_KEYWORD:
				return nil, fmt.Errorf("search attribute %s has type %s, want Keyword", name, t)
			}
		}
		return missing, nil
	}
	if !refused(err) {
		return nil, fmt.Errorf("list search attributes: %w", err)
	}
	// No operator access: a visibility query on an undefined attribute
	// is rejected as invalid.
	var missing []string
	for _, name := range signals.SearchAttributes {
		_, qerr := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: namespace,
			Query:     fmt.Sprintf("%s = ''", name),
		})
		switch {
		case qerr == nil:
		case undefinedSearchAttribute(qerr):
			missing = append(missing, name)
		default:
			return nil, fmt.Errorf("list search attributes: %w; query %s: %w", err, name, qerr)
		}
	}
	return missing, nil
}

// refused reports whether Temporal refused an operator call: no permission
// (Temporal Cloud without admin rights) or not implemented.
func refused(err error) bool {
	switch serviceerror.ToStatus(err).Code() {
	case codes.PermissionDenied, codes.Unimplemented:
		return true
	}
	return false
}

// undefinedSearchAttribute reports whether err is Temporal's answer to a
// start or a visibility query that uses a search attribute the namespace
// does not define.
func undefinedSearchAttribute(err error) bool {
	var inv *serviceerror.InvalidArgument
	if !errors.As(err, &inv) {
		return false
	}
	msg := strings.ToLower(inv.Error())
	if !strings.Contains(msg, "search attribute") {
		return false
	}
	for _, s := range []string{"not defined", "invalid search attribute", "no mapping defined", "unknown search attribute"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// searchAttributesErr maps Temporal's rejection of an undefined run search
// attribute to a *MissingSearchAttributesError naming every missing one
// (asking Temporal which; if that fails, the ones the rejection names). It
// returns nil for any other error.
func (s *Service) searchAttributesErr(ctx context.Context, err error) error {
	if !undefinedSearchAttribute(err) {
		return nil
	}
	var named []string
	for _, name := range signals.SearchAttributes {
		if strings.Contains(err.Error(), name) {
			named = append(named, name)
		}
	}
	if len(named) == 0 {
		// Not one of ours: some other attribute the query or start used.
		return nil
	}
	names := named
	if all, lerr := missingSearchAttributes(ctx, s.client, s.opts.Namespace); lerr == nil && len(all) > 0 {
		names = all
	}
	return &MissingSearchAttributesError{Namespace: s.opts.Namespace, Names: slices.Clip(names), Err: err}
}
