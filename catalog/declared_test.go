package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
)

// A declared tool takes part in name conflicts as a publication does,
// while a worker of its task queue is live: a publication of the same
// name with a different spec makes the tool unavailable, naming both; the
// same spec is served once (docs/catalog.md, "Conflicts").
func TestLiveDeclarationConflicts(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	tq := testenv.UniqueTaskQueue(t)
	identity := unique("worker")
	w := worker.New(env.Client, tq, worker.Options{Identity: identity})
	w.RegisterWorkflowWithOptions(func(workflow.Context) error { return nil }, workflow.RegisterOptions{Name: "noop"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	name := unique("refund")
	published := signals.ToolSpec{Name: name, Description: "Refund an order.", InputSchema: json.RawMessage(`{"type":"object"}`),
		TaskSupport: signals.TaskOptional, TaskQueue: tq, Contract: signals.ContractOpenWOP}
	pub := signals.Publication{TaskQueue: tq, Identity: identity, Tools: []signals.ToolSpec{published}}
	if err := catalog.Publish(ctx, env.Client, pub); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = catalog.Withdraw(context.Background(), env.Client, tq, identity) })

	t.Run("different spec", func(t *testing.T) {
		declared := published
		declared.Contract = signals.ContractPlain
		live, err := catalog.NewLive(env.Client, catalog.LiveOptions{Declared: []signals.ToolSpec{declared}})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, waitBound, "the conflict seen", func() (bool, string) {
			_, err := live.Lookup(ctx, name)
			var unav *catalog.UnavailableError
			return errors.As(err, &unav) && strings.Contains(unav.Error(), "different specs"), fmt.Sprintf("Lookup: %v", err)
		})
		_, err = live.Lookup(ctx, name)
		unav := unavailable(t, err, name)
		for _, want := range []string{"contract differ", fmt.Sprintf("the declaration on task queue %q", tq), fmt.Sprintf("worker %q", identity)} {
			if !strings.Contains(unav.Error(), want) {
				t.Errorf("UnavailableError %q does not mention %s", unav.Error(), want)
			}
		}
		if listed(t, live, name) != nil {
			t.Error("a conflicting tool is listed")
		}
	})
	t.Run("same spec", func(t *testing.T) {
		live, err := catalog.NewLive(env.Client, catalog.LiveOptions{Declared: []signals.ToolSpec{published}})
		if err != nil {
			t.Fatal(err)
		}
		if tool := waitListed(t, live, name); tool.Spec().Contract != signals.ContractOpenWOP {
			t.Errorf("listed %+v", tool.Spec())
		}
	})
}
