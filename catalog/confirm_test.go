package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
)

// describeCounter is a real Temporal client that counts describe calls.
type describeCounter struct {
	client.Client
	describes atomic.Int64
}

func (c *describeCounter) DescribeWorkflowExecution(ctx context.Context, id, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	c.describes.Add(1)
	return c.Client.DescribeWorkflowExecution(ctx, id, runID)
}

// TestConfirmSharedByCallsTogether: calls that come together confirm a
// published tool with one describe call between them, not one each, and a
// worker that stops is still refused new calls within a second.
func TestConfirmSharedByCallsTogether(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	tq := testenv.UniqueTaskQueue(t)
	name := unique("echo")
	counter := &describeCounter{Client: env.Client}
	live, err := catalog.NewLive(counter, catalog.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := runWorker(t, env.Client, newRegistry(t, echoTool(name, "Echo the text.", "w")), tq, "")
	waitListed(t, live, name)

	const calls = 50
	before := counter.describes.Load()
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := live.ForCall(ctx, name); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("ForCall of a served tool = %v", err)
	}
	// 50 calls at once fit in a few confirmation windows.
	if n := counter.describes.Load() - before; n < 1 || n > 10 {
		t.Fatalf("%d calls made %d describe calls, want 1 to 10", calls, n)
	}

	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	eventually(t, waitBound, "calls refused after the worker stopped", func() (bool, string) {
		_, err := live.ForCall(ctx, name)
		var unav *catalog.UnavailableError
		return errors.As(err, &unav) || errors.Is(err, catalog.ErrUnknownTool), fmt.Sprintf("ForCall: %v", err)
	})
	if d := time.Since(stopped); d > time.Second {
		t.Fatalf("calls refused %s after the worker stopped, want within a second", d)
	}
}
