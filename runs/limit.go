package runs

import (
	"context"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// DefaultMaxTemporalCalls bounds the Temporal calls a Service makes at
// once unless Options.MaxTemporalCalls says otherwise.
const DefaultMaxTemporalCalls = 16

// limitedClient is the Temporal client of a Service whose short calls
// (starts, signals, queries, describes, cancels and history reads that do
// not long-poll) take one of a bounded number of slots, waiting for one
// when all are taken: the calls on runs that exist first, then the starts
// of new runs (slots). A loaded Temporal then gets the calls at the
// concurrency it serves best, and what waits beyond that waits in this
// process, where it costs nothing: past saturation, more concurrent calls
// make every call slower and Temporal's throughput fall (contention in its
// persistence and task queues), and the reads that then go late add to
// the load. Long polls (a blocking call following its run to the end,
// listeners) hold no slot: they wait on Temporal, not on its work.
type limitedClient struct {
	client.Client
	slots *slots
}

// limitCalls returns c with its short calls bounded to n at once (n <= 0:
// nil, for c unbounded).
func limitCalls(c client.Client, n int) *limitedClient {
	if n <= 0 {
		return nil
	}
	return &limitedClient{Client: c, slots: newSlots(n)}
}

// heldSlot marks the context of an operation that holds a slot for all
// its calls (limitedClient.hold).
type heldSlot struct{}

// hold takes one slot for the calls an operation makes in sequence with
// the returned context, so that they follow one another without waiting
// behind other calls in between: the query that confirms a signal then
// reaches the run while the signal's workflow task is still pending, as
// it does on an idle Temporal. c may be nil (no bound).
func (c *limitedClient) hold(ctx context.Context) (context.Context, func(), error) {
	if c == nil || ctx.Value(heldSlot{}) != nil {
		return ctx, func() {}, nil
	}
	release, err := c.acquire(ctx, rankRun)
	if err != nil {
		return ctx, nil, err
	}
	return context.WithValue(ctx, heldSlot{}, true), release, nil
}

// acquire takes a slot for a call of rank r, waiting while all are taken
// (see slots), and returns the func that gives it back. A call made
// within hold takes none.
func (c *limitedClient) acquire(ctx context.Context, r callRank) (func(), error) {
	if ctx.Value(heldSlot{}) != nil {
		return func() {}, nil
	}
	return c.slots.take(ctx, r)
}

// ExecuteWorkflow starts a run with a slot of a start, which the calls on
// runs that exist go before (see slots).
func (c *limitedClient) ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error) {
	release, err := c.acquire(ctx, rankStart)
	if err != nil {
		return nil, err
	}
	defer release()
	return c.Client.ExecuteWorkflow(ctx, options, workflow, args...)
}

func (c *limitedClient) SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error {
	release, err := c.acquire(ctx, rankRun)
	if err != nil {
		return err
	}
	defer release()
	return c.Client.SignalWorkflow(ctx, workflowID, runID, signalName, arg)
}

func (c *limitedClient) CancelWorkflowWithOptions(ctx context.Context, options client.CancelWorkflowOptions) error {
	release, err := c.acquire(ctx, rankRun)
	if err != nil {
		return err
	}
	defer release()
	return c.Client.CancelWorkflowWithOptions(ctx, options)
}

func (c *limitedClient) QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error) {
	release, err := c.acquire(ctx, rankRun)
	if err != nil {
		return nil, err
	}
	defer release()
	return c.Client.QueryWorkflow(ctx, workflowID, runID, queryType, args...)
}

func (c *limitedClient) QueryWorkflowWithOptions(ctx context.Context, request *client.QueryWorkflowWithOptionsRequest) (*client.QueryWorkflowWithOptionsResponse, error) {
	release, err := c.acquire(ctx, rankRun)
	if err != nil {
		return nil, err
	}
	defer release()
	return c.Client.QueryWorkflowWithOptions(ctx, request)
}

func (c *limitedClient) DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	release, err := c.acquire(ctx, rankRun)
	if err != nil {
		return nil, err
	}
	defer release()
	return c.Client.DescribeWorkflowExecution(ctx, workflowID, runID)
}

// GetWorkflowHistory bounds the page reads of a history read that does not
// long-poll; a long poll holds no slot.
func (c *limitedClient) GetWorkflowHistory(ctx context.Context, workflowID, runID string, isLongPoll bool, filterType enumspb.HistoryEventFilterType) client.HistoryEventIterator {
	it := c.Client.GetWorkflowHistory(ctx, workflowID, runID, isLongPoll, filterType)
	if isLongPoll {
		return it
	}
	return &limitedHistory{HistoryEventIterator: it, c: c, ctx: ctx}
}

// limitedHistory is a history iterator whose page reads (HasNext reads the
// next page when the one held is used up) take a slot.
type limitedHistory struct {
	client.HistoryEventIterator
	c   *limitedClient
	ctx context.Context
}

func (h *limitedHistory) HasNext() bool {
	release, err := h.c.acquire(h.ctx, rankRun)
	if err != nil {
		// The read's context ended: the iterator reports it from Next.
		return h.HistoryEventIterator.HasNext()
	}
	defer release()
	return h.HistoryEventIterator.HasNext()
}
