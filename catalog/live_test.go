package catalog_test

// Integration tests of the Live source and of publishing, against the real
// embedded Temporal server (internal/testing/testenv): workers publish with
// workflows.Registry.Run or catalog.Publish, and Live reads the
// publications and the task queues' pollers.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// waitBound is the generous bound of every wait on the catalog: a new
// worker is seen, or a stopped one forgotten, within it.
const waitBound = 10 * time.Second

// unique returns prefix plus a random suffix: a tool name or identity no
// other test on the shared server uses.
func unique(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// echoIn is the input of the echo tools.
type echoIn struct {
	Text string `json:"text,omitempty" jsonschema:"what to echo"`
	// Hold makes the run wait for a "release" signal before it answers.
	Hold bool `json:"hold,omitempty" jsonschema:"wait for the release signal"`
}

// echoTool is a harness (openwop) tool that answers the text it got and
// the label of the worker that ran it.
func echoTool(name, description, label string, opts ...workflows.ToolOption) workflows.Tool {
	return workflows.NewTool(name, description, func(ctx workflow.Context, in echoIn) (map[string]any, error) {
		if in.Hold {
			workflow.GetSignalChannel(ctx, "release").Receive(ctx, nil)
		}
		return map[string]any{"echo": in.Text, "worker": label}, nil
	}, opts...)
}

func newRegistry(t *testing.T, tools ...workflows.Tool) *workflows.Registry {
	t.Helper()
	reg, err := workflows.NewRegistry(tools)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// runningWorker is a Registry.Run in a goroutine.
type runningWorker struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// runWorker runs reg on taskQueue with the given worker identity ("" for
// Run's default) until stop or the end of the test.
func runWorker(t *testing.T, c client.Client, reg *workflows.Registry, taskQueue, identity string) *runningWorker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &runningWorker{cancel: cancel, done: make(chan error, 1)}
	go func() {
		w.done <- reg.Run(ctx, c, taskQueue, workflows.WorkerOptions{Worker: worker.Options{Identity: identity}})
	}()
	t.Cleanup(func() { _ = w.stop() })
	return w
}

// stop cancels the worker's context and returns what Run returned (an
// error when Run did not return within 30 s).
func (w *runningWorker) stop() error {
	w.once.Do(func() {
		w.cancel()
		select {
		case w.err = <-w.done:
		case <-time.After(30 * time.Second):
			w.err = errors.New("Run did not return within 30 s of its context's end")
		}
	})
	return w.err
}

// failedEarly returns Run's error when Run has already returned.
func (w *runningWorker) failedEarly() (error, bool) {
	select {
	case err := <-w.done:
		w.done <- err
		return err, true
	default:
		return nil, false
	}
}

// listed returns the tool named name among live's tools, or nil.
func listed(t *testing.T, live catalog.Source, name string) *catalog.Tool {
	t.Helper()
	tools, err := live.Tools(context.Background())
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	for _, tool := range tools {
		if tool.Name() == name {
			return tool
		}
	}
	return nil
}

// eventually waits by the rule of internal/testing/visibility (what these
// tests wait for is mostly read from Temporal's visibility store: the
// publications the catalog lists, the runs a query finds) until cond
// reports true, and fails the test when d passes first, with cond's last
// description of the state.
func eventually(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	err := visibility.Await(context.Background(), d, func(context.Context) error {
		if ok, state := cond(); !ok {
			return errors.New(state)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitListed waits until live lists the tool and returns it.
func waitListed(t *testing.T, live catalog.Source, name string) *catalog.Tool {
	t.Helper()
	var tool *catalog.Tool
	eventually(t, waitBound, fmt.Sprintf("tool %q listed", name), func() (bool, string) {
		tool = listed(t, live, name)
		if tool != nil {
			return true, ""
		}
		_, err := live.Lookup(context.Background(), name)
		return false, fmt.Sprintf("Lookup: %v", err)
	})
	return tool
}

// unavailable fails unless err is an *UnavailableError of the tool.
func unavailable(t *testing.T, err error, name string) *catalog.UnavailableError {
	t.Helper()
	var unav *catalog.UnavailableError
	if !errors.As(err, &unav) {
		t.Fatalf("Lookup(%q) = %v, want an *UnavailableError", name, err)
	}
	if unav.Tool != name {
		t.Fatalf("UnavailableError.Tool = %q, want %q", unav.Tool, name)
	}
	return unav
}

// publicationStatus is the Temporal status of a worker's publication
// (UNSPECIFIED when it does not exist).
func publicationStatus(t *testing.T, c client.Client, taskQueue, identity string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	desc, err := c.DescribeWorkflowExecution(context.Background(), signals.PublicationID(taskQueue, identity), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED
	}
	if err != nil {
		t.Fatalf("describe publication: %v", err)
	}
	return desc.GetWorkflowExecutionInfo().GetStatus()
}

// defaultIdentity is the identity Registry.Run gives a worker by default.
func defaultIdentity(taskQueue string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%d@%s@%s", os.Getpid(), host, taskQueue)
}

// A worker started while a Live source is in use is seen within seconds,
// with its task queue, and leaves the catalog when it stops.
func TestLiveSeesWorkerStartAndStop(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	tq := testenv.UniqueTaskQueue(t)
	name := unique("echo")
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := live.Lookup(ctx, name); !errors.Is(err, catalog.ErrUnknownTool) {
		t.Fatalf("Lookup before any worker = %v, want ErrUnknownTool", err)
	}
	if listed(t, live, name) != nil {
		t.Fatal("tool listed before any worker")
	}

	w := runWorker(t, env.Client, newRegistry(t, echoTool(name, "Echo the text.", "w")), tq, "")
	var tool *catalog.Tool
	eventually(t, waitBound, "the new worker's tool listed", func() (bool, string) {
		if err, done := w.failedEarly(); done {
			t.Fatalf("Run returned early: %v", err)
		}
		tool = listed(t, live, name)
		_, err := live.Lookup(ctx, name)
		return tool != nil, fmt.Sprintf("Lookup: %v", err)
	})
	if got := tool.Spec().TaskQueue; got != tq {
		t.Fatalf("listed tool's task queue = %q, want %q", got, tq)
	}
	if got := tool.Spec().Description; got != "Echo the text." {
		t.Fatalf("listed tool's description = %q", got)
	}
	looked, err := live.Lookup(ctx, name)
	if err != nil || looked.Spec().TaskQueue != tq {
		t.Fatalf("Lookup = %v, %v; want the tool on %q", looked, err, tq)
	}

	if err := w.stop(); err != nil {
		t.Fatalf("Run after its context ended = %v, want nil", err)
	}
	// Run withdrew its publication...
	if st := publicationStatus(t, env.Client, tq, defaultIdentity(tq)); st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("publication still %s after Run returned", st)
	}
	// ...so the tool leaves the catalog.
	eventually(t, waitBound, "the stopped worker's tool gone", func() (bool, string) {
		_, err := live.Lookup(ctx, name)
		var unav *catalog.UnavailableError
		gone := errors.Is(err, catalog.ErrUnknownTool) || errors.As(err, &unav)
		return gone && listed(t, live, name) == nil, fmt.Sprintf("Lookup: %v", err)
	})
}

// A publication whose worker does not poll is not a live tool: it is not
// listed and a lookup says no worker is live on its task queue.
func TestLivePublicationWithoutPoller(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	tq := testenv.UniqueTaskQueue(t)
	name := unique("ghost")
	pub := signals.Publication{TaskQueue: tq, Identity: unique("ghost-worker"), Tools: []signals.ToolSpec{{
		Name: name, Description: "Served by nobody.", InputSchema: json.RawMessage(`{"type":"object"}`),
	}}}
	if err := catalog.Publish(ctx, env.Client, pub); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = catalog.Withdraw(context.Background(), env.Client, tq, pub.Identity) })
	if ok, err := catalog.Published(ctx, env.Client, pub); !ok || err != nil {
		t.Fatalf("Published = %v, %v; want the publication running", ok, err)
	}

	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Visibility lists the publication within moments; from then on the
	// tool is known, and unavailable.
	eventually(t, waitBound, "the publication seen", func() (bool, string) {
		_, err := live.Lookup(ctx, name)
		var unav *catalog.UnavailableError
		return errors.As(err, &unav), fmt.Sprintf("Lookup: %v", err)
	})
	if listed(t, live, name) != nil {
		t.Fatal("a tool without a live worker is listed")
	}
	_, err = live.Lookup(ctx, name)
	unav := unavailable(t, err, name)
	for _, want := range []string{"no live worker", fmt.Sprintf("%q", tq)} {
		if !strings.Contains(unav.Error(), want) {
			t.Fatalf("UnavailableError %q does not mention %s", unav.Error(), want)
		}
	}
	if !unav.Visible("any-tenant") {
		t.Fatal("an untenanted tool's UnavailableError is not visible to every tenant")
	}
}

// Publishing a different spec under a name a live worker publishes is
// refused at start; the same spec on the same queue is scale-out.
func TestPublishConflict(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	tq1 := testenv.UniqueTaskQueue(t)
	name := unique("x")
	idA := unique("worker-a")
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := runWorker(t, env.Client, newRegistry(t, echoTool(name, "Spec one.", "a")), tq1, idA)
	eventually(t, waitBound, "worker A's tool listed", func() (bool, string) {
		if err, done := a.failedEarly(); done {
			t.Fatalf("worker A's Run returned: %v", err)
		}
		_, err := live.Lookup(ctx, name)
		return err == nil, fmt.Sprintf("Lookup: %v", err)
	})

	for _, tc := range []struct {
		name        string
		description string
		otherQueue  bool
		differ      string // the spec field named in the conflict; "" for none
	}{
		{name: "different description", description: "Spec two.", otherQueue: true, differ: "description"},
		{name: "same spec on another task queue", description: "Spec one.", otherQueue: true, differ: "taskQueue"},
		{name: "same spec on the same task queue", description: "Spec one.", otherQueue: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tq := tq1
			if tc.otherQueue {
				tq = testenv.UniqueTaskQueue(t)
			}
			idB := unique("worker-b")
			reg := newRegistry(t, echoTool(name, tc.description, "b"))
			if tc.differ == "" {
				b := runWorker(t, env.Client, reg, tq, idB)
				eventually(t, waitBound, "worker B published", func() (bool, string) {
					if err, done := b.failedEarly(); done {
						t.Fatalf("worker B's Run returned: %v", err)
					}
					ok, err := catalog.Published(ctx, env.Client, reg.Publication(tq, idB))
					return ok, fmt.Sprintf("Published: %v, %v", ok, err)
				})
				if _, err := live.Lookup(ctx, name); err != nil {
					t.Fatalf("Lookup with two identical publications = %v", err)
				}
				if err := b.stop(); err != nil {
					t.Fatalf("worker B's Run = %v", err)
				}
				return
			}

			// Through Registry.Run: the worker does not start serving.
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err := reg.Run(rctx, env.Client, tq, workflows.WorkerOptions{Worker: worker.Options{Identity: idB}})
			wantConflict(t, err, name, idA, tq1, tc.differ)
			if st := publicationStatus(t, env.Client, tq, idB); st != enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED {
				t.Fatalf("refused worker's publication exists (%s)", st)
			}
			// Through Publish directly.
			err = catalog.Publish(ctx, env.Client, reg.Publication(tq, idB))
			wantConflict(t, err, name, idA, tq1, tc.differ)
			if st := publicationStatus(t, env.Client, tq, idB); st != enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED {
				t.Fatalf("refused publication exists (%s)", st)
			}
			// Worker A's tool is still served, unchanged.
			tool, err := live.Lookup(ctx, name)
			if err != nil || tool.Spec().Description != "Spec one." || tool.Spec().TaskQueue != tq1 {
				t.Fatalf("Lookup after the refused publication = %v, %v", tool, err)
			}
		})
	}

	// Once worker A is gone, another spec may be published.
	if err := a.stop(); err != nil {
		t.Fatalf("worker A's Run = %v", err)
	}
	tq2 := testenv.UniqueTaskQueue(t)
	c := runWorker(t, env.Client, newRegistry(t, echoTool(name, "Spec two.", "c")), tq2, unique("worker-c"))
	eventually(t, waitBound, "the new spec listed after worker A left", func() (bool, string) {
		if err, done := c.failedEarly(); done {
			t.Fatalf("worker C's Run returned: %v", err)
		}
		tool, err := live.Lookup(ctx, name)
		return err == nil && tool.Spec().Description == "Spec two." && tool.Spec().TaskQueue == tq2,
			fmt.Sprintf("Lookup: %v, %v", tool, err)
	})
}

// wantConflict fails unless err is a *ConflictError naming the tool, the
// live worker and its task queue, and the differing field.
func wantConflict(t *testing.T, err error, tool, identity, taskQueue, field string) {
	t.Helper()
	var ce *catalog.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v, want a *catalog.ConflictError", err)
	}
	if len(ce.Conflicts) != 1 {
		t.Fatalf("conflicts = %q, want one", ce.Conflicts)
	}
	for _, want := range []string{fmt.Sprintf("%q", tool), fmt.Sprintf("%q", identity), fmt.Sprintf("%q", taskQueue), field} {
		if !strings.Contains(ce.Error(), want) {
			t.Fatalf("conflict %q does not mention %s", ce.Error(), want)
		}
	}
}

// Two live publications that disagree (both got past Publish's check)
// make the tool unavailable until one of them is gone.
func TestLiveConflictingPublications(t *testing.T) {
	env := testenv.Temporal(t)
	ctx := context.Background()
	tq1, tq2 := testenv.UniqueTaskQueue(t), testenv.UniqueTaskQueue(t)
	name := unique("y")
	idA, idB := unique("worker-a"), unique("worker-b")
	live, err := catalog.NewLive(env.Client, catalog.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := runWorker(t, env.Client, newRegistry(t, echoTool(name, "Spec one.", "a")), tq1, idA)
	eventually(t, waitBound, "worker A's tool listed", func() (bool, string) {
		if err, done := a.failedEarly(); done {
			t.Fatalf("worker A's Run returned: %v", err)
		}
		_, err := live.Lookup(ctx, name)
		return err == nil, fmt.Sprintf("Lookup: %v", err)
	})

	// Worker B polls tq2 with identity idB and publishes another spec the
	// way a worker that raced A would have: without the check.
	wb := worker.New(env.Client, tq2, worker.Options{Identity: idB})
	wb.RegisterWorkflowWithOptions(func(workflow.Context) error { return nil }, workflow.RegisterOptions{Name: unique("noop")})
	if err := wb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wb.Stop)
	pubB := signals.Publication{TaskQueue: tq2, Identity: idB, PublishedAt: time.Now().UTC(), Tools: []signals.ToolSpec{{
		Name: name, Description: "Spec two.", InputSchema: json.RawMessage(`{"type":"object"}`),
		TaskSupport: signals.TaskOptional, TaskQueue: tq2,
	}}}
	if _, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       signals.PublicationID(tq2, idB),
		TaskQueue:                signals.PublicationTaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
		Memo:                     map[string]any{signals.MemoPublication: pubB},
	}, signals.PublicationWorkflowType); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = catalog.Withdraw(context.Background(), env.Client, tq2, idB) })

	var unav *catalog.UnavailableError
	eventually(t, waitBound, "the tool refused for conflicting publications", func() (bool, string) {
		_, err := live.Lookup(ctx, name)
		ok := errors.As(err, &unav) && strings.Contains(err.Error(), "different specs")
		return ok, fmt.Sprintf("Lookup: %v", err)
	})
	for _, want := range []string{fmt.Sprintf("%q", idA), fmt.Sprintf("%q", idB), "description"} {
		if !strings.Contains(unav.Error(), want) {
			t.Fatalf("UnavailableError %q does not mention %s", unav.Error(), want)
		}
	}
	if listed(t, live, name) != nil {
		t.Fatal("a tool with conflicting live publications is listed")
	}

	// B leaves: A's spec is served again.
	if err := catalog.Withdraw(ctx, env.Client, tq2, idB); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitBound, "worker A's tool served again", func() (bool, string) {
		tool, err := live.Lookup(ctx, name)
		return err == nil && tool.Spec().Description == "Spec one.", fmt.Sprintf("Lookup: %v, %v", tool, err)
	})
}

// LoadDeclarations refuses a file it cannot serve, saying which file and
// what is wrong.
func TestLoadDeclarationsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string // contents; "" for a missing file
		want []string
	}{
		{name: "missing file", want: []string{"no such file"}},
		{name: "not JSON", file: `[{"name":`, want: []string{"unexpected EOF"}},
		{name: "not an array", file: `{"name":"a","description":"d","taskQueue":"q"}`, want: []string{"cannot unmarshal object"}},
		{name: "unknown field", file: `[{"name":"a","description":"d","taskQueue":"q","taskqueue2":"x"}]`,
			want: []string{`unknown field "taskqueue2"`}},
		{name: "missing taskQueue", file: `[{"name":"refund","description":"d","inputSchema":{"type":"object"}}]`,
			want: []string{`"refund"`, "no taskQueue"}},
		{name: "schema not an object schema", file: `[{"name":"a","description":"d","taskQueue":"q","inputSchema":{"type":"string"}}]`,
			want: []string{"tool a: input schema", `"string", want object`}},
		{name: "schema not a schema", file: `[{"name":"a","description":"d","taskQueue":"q","inputSchema":{"type":"object","properties":{"n":{"type":7}}}}]`,
			want: []string{"tool a: input schema"}},
		{name: "invalid tool name", file: `[{"name":"a b","description":"d","taskQueue":"q"}]`, want: []string{`"a b" does not match`}},
		{name: "reserved tool name", file: `[{"name":"openwop_run_status","description":"d","taskQueue":"q","contract":"plain"}]`,
			want: []string{`"openwop_run_status"`, `prefix "openwop_" is reserved`}},
		{name: "no description", file: `[{"name":"a","taskQueue":"q"}]`, want: []string{"empty description"}},
		{name: "unknown contract", file: `[{"name":"a","description":"d","taskQueue":"q","contract":"grpc"}]`,
			want: []string{`unknown contract "grpc"`}},
		{name: "plain workflow that suspends", file: `[{"name":"a","description":"d","taskQueue":"q","canSuspend":true,"contract":"plain"}]`,
			want: []string{"plain workflow cannot ask for input"}},
		{name: "scope with a space", file: `[{"name":"refund","description":"d","taskQueue":"q","contract":"plain","scopes":["refunds write"]}]`,
			want: []string{"tool refund", `scope "refunds write"`, "RFC 6749"}},
		{name: "empty scope", file: `[{"name":"refund","description":"d","taskQueue":"q","contract":"plain","scopes":[""]}]`,
			want: []string{"tool refund", `scope ""`}},
		{name: "scope with a quote", file: `[{"name":"refund","description":"d","taskQueue":"q","contract":"plain","scopes":["a\"b"]}]`,
			want: []string{"tool refund", "is not an OAuth scope token"}},
		{name: "missing contract", file: `[{"name":"refund","description":"d","taskQueue":"q"}]`,
			want: []string{`tool "refund" has no contract`, `"plain"`, `"openwop"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tools.json")
			if tc.file != "" {
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			specs, err := catalog.LoadDeclarations(path)
			if err == nil {
				t.Fatalf("LoadDeclarations = %+v, want an error", specs)
			}
			for _, want := range append([]string{path}, tc.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not mention %s", err, want)
				}
			}
		})
	}
}

// LoadDeclarations keeps what the file says and defaults the workflow
// type to the name.
func TestLoadDeclarations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tools.json")
	file := `[
  {"name": "summarize", "description": "Summarize a ticket.", "inputSchema": {"type": "object"}, "taskQueue": "py", "contract": "plain"},
  {"name": "approve", "description": "Approve a refund.", "inputSchema": {"type": "object"}, "taskQueue": "ts",
   "workflowType": "approveRefund", "contract": "openwop", "canSuspend": true, "tenants": ["acme"], "scopes": ["refunds:approve"]}
]`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	specs, err := catalog.LoadDeclarations(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("specs = %+v", specs)
	}
	if s := specs[0]; s.Name != "summarize" || s.Contract != signals.ContractPlain || s.TaskQueue != "py" || s.Type() != "summarize" {
		t.Fatalf("first spec = %+v, want plain on py with workflow type summarize", s)
	}
	if s := specs[1]; s.Contract != signals.ContractOpenWOP || s.Type() != "approveRefund" || !s.CanSuspend || len(s.Tenants) != 1 ||
		len(s.Scopes) != 1 || s.Scopes[0] != "refunds:approve" {
		t.Fatalf("second spec = %+v", s)
	}
}

// NewLive refuses declarations it cannot serve.
func TestNewLiveDeclarationErrors(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	spec := signals.ToolSpec{Name: "a", Description: "d", TaskQueue: "q", Contract: signals.ContractPlain}
	noQueue := spec
	noQueue.TaskQueue = ""
	badSchema := spec
	badSchema.InputSchema = json.RawMessage(`{"type":"array"}`)
	for _, tc := range []struct {
		name     string
		declared []signals.ToolSpec
		want     string
	}{
		{"no task queue", []signals.ToolSpec{noQueue}, "has no taskQueue"},
		{"declared twice", []signals.ToolSpec{spec, spec}, `tool "a" declared twice`},
		{"bad schema", []signals.ToolSpec{badSchema}, "input schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := catalog.NewLive(c, catalog.LiveOptions{Declared: tc.declared})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewLive = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := catalog.NewLive(nil, catalog.LiveOptions{}); err == nil {
		t.Fatal("NewLive without a client succeeded")
	}
}
