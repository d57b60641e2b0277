package catalog_test

import (
	"context"
	"fmt"
	"testing"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/signals"
)

// TestPublicationsOutOfDefaultList: a worker's publication is in its
// namespace division, so that a workflow listing that does not name it
// (the Temporal UI's list, `temporal workflow list`) leaves it out, while
// the catalog lists it; a publication without one (an earlier release's,
// another language's) is read as well (TestLiveConflictingPublications).
func TestPublicationsOutOfDefaultList(t *testing.T) {
	env := testenv.Temporal(t)
	tq, name, id := testenv.UniqueTaskQueue(t), unique("hidden"), unique("worker")
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, env.Client, newRegistry(t, echoTool(name, "Echo.", "w")), tq, id)
	waitListed(t, live, name)
	count := func(ctx context.Context, query string) (int64, error) {
		resp, err := env.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		return int64(len(resp.GetExecutions())), err
	}
	byID := fmt.Sprintf("WorkflowId = '%s'", signals.PublicationID(tq, id))
	visibility.Require(t, "the publication listed in its division", func(ctx context.Context) error {
		n, err := count(ctx, byID+fmt.Sprintf(" AND %s = '%s'", signals.NamespaceDivisionAttribute, signals.PublicationDivision))
		if err == nil && n != 1 {
			err = fmt.Errorf("%d listed", n)
		}
		return err
	})
	for _, query := range []string{byID, fmt.Sprintf("WorkflowType = '%s' AND %s", signals.PublicationWorkflowType, byID)} {
		if n, err := count(context.Background(), query); err != nil || n != 0 {
			t.Errorf("list %q = %d, %v; want the publication left out", query, n, err)
		}
		resp, err := env.Client.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		if err != nil || resp.GetCount() != 0 {
			t.Errorf("count %q = %d, %v; want the publication left out", query, resp.GetCount(), err)
		}
	}
}
