package workflows_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// testSet is a ToolSet the test changes.
type testSet struct {
	mu      sync.Mutex
	tools   []workflows.Tool
	changed chan struct{}
}

func (s *testSet) Tools() []workflows.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools)
}

func (s *testSet) Changed() <-chan struct{} { return s.changed }

func (s *testSet) set(tools ...workflows.Tool) {
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	s.changed <- struct{}{}
}

type okOut struct {
	Tool string `json:"tool"`
}

func okTool(name string) workflows.Tool {
	return workflows.NewTool(name, "Answers its name.", func(workflow.Context, struct{}) (okOut, error) { return okOut{name}, nil })
}

// A registry's tool set is published with its tools and again at each
// change; a tool of the set named as a registry's is left out; a tool
// that joins the set later is registered, and its runs run.
func TestIntegrationToolSet(t *testing.T) {
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	static, a, b := testenv.UniqueID("static_"), testenv.UniqueID("a_"), testenv.UniqueID("b_")
	reg, err := workflows.NewRegistry([]workflows.Tool{okTool(static)})
	if err != nil {
		t.Fatal(err)
	}
	set := &testSet{tools: []workflows.Tool{okTool(a), okTool(static)}, changed: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.WithToolSet(set).Run(ctx, env.Client, tq, workflows.WorkerOptions{}) }()
	t.Cleanup(func() { cancel(); <-done })

	waitPublished(t, env, tq, []string{a, static})
	set.set(okTool(b))
	waitPublished(t, env, tq, []string{b, static})
	for _, name := range []string{a, b} { // a left the set: its workflow stays
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		run, err := env.Client.ExecuteWorkflow(rctx, client.StartWorkflowOptions{ID: testenv.UniqueID("toolset-"), TaskQueue: tq},
			name, signals.StartRequest{Arguments: []byte(`{}`)})
		var rec signals.RunRecord
		if err == nil {
			err = run.Get(rctx, &rec)
		}
		rcancel()
		if err != nil || rec.Snapshot.Status != signals.StatusCompleted {
			t.Fatalf("run of %s: %v, status %q, want completed", name, err, rec.Snapshot.Status)
		}
	}
}

// waitPublished waits until the publication on tq lists exactly names (a
// minute at most).
func waitPublished(t *testing.T, env *testenv.Env, tq string, names []string) {
	t.Helper()
	slices.Sort(names)
	var got []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		pubs, err := catalog.Publications(context.Background(), env.Client)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pubs {
			if p.TaskQueue == tq {
				got = got[:0]
				for _, spec := range p.Tools {
					got = append(got, spec.Name)
				}
				if slices.Equal(got, names) {
					return
				}
			}
		}
	}
	t.Fatalf("publication on %s lists %v within a minute, want %v", tq, got, names)
}
