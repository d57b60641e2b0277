package workflows

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
)

// RunWorkflow is the signature of every registered tool workflow (the run
// contract): one StartRequest in, the RunRecord out.
type RunWorkflow func(ctx workflow.Context, req signals.StartRequest) (signals.RunRecord, error)

// Tool is a tool: its spec for the mount and its workflow for the worker.
// Make one with NewTool.
type Tool struct {
	spec signals.ToolSpec
	run  RunWorkflow
	err  error
	// behavior is the tool's versioning behavior on a versioned worker
	// (unspecified: the worker's default, pinned under Registry.Run).
	behavior workflow.VersioningBehavior
}

// Spec returns the tool's spec.
func (t Tool) Spec() signals.ToolSpec { return cloneSpec(t.spec) }

// Workflow returns the workflow function registered under the tool's name.
func (t Tool) Workflow() RunWorkflow { return t.run }

// Err reports why NewTool could not build the tool (nil when it could).
func (t Tool) Err() error { return t.err }

// toolConfig collects ToolOptions.
type toolConfig struct {
	spec signals.ToolSpec
	// edits are the SchemaOptions of the input schema.
	edits []SchemaOption
	// output is set when WithOutputSchema gave the output schema.
	output bool
	// input is the input schema WithInputSchema gave (nil: derived).
	input json.RawMessage
	// err is what an option found wrong (the first).
	err error
	// behavior is set by WithVersioningBehavior.
	behavior workflow.VersioningBehavior
}

// ToolOption configures a tool in NewTool. Every SchemaOption is one: it
// edits the tool's input schema.
type ToolOption interface {
	applyTool(c *toolConfig)
}

// toolOption is a ToolOption that is not a SchemaOption.
type toolOption func(*toolConfig)

func (f toolOption) applyTool(c *toolConfig) { f(c) }

// WithTaskSupport sets whether the tool may (optional, the default), must
// (required) or must not (forbidden) run as an MCP task.
func WithTaskSupport(ts signals.TaskSupport) ToolOption {
	return toolOption(func(c *toolConfig) { c.spec.TaskSupport = ts })
}

// Suspends marks a tool whose runs may raise interrupts.
func Suspends() ToolOption { return toolOption(func(c *toolConfig) { c.spec.CanSuspend = true }) }

// WithPreRunInput adds a question the mount asks before it starts the run;
// the run reads the answer with PreRunInput(ctx, key). schema is a flat
// object schema.
func WithPreRunInput(key, message string, schema json.RawMessage) ToolOption {
	return toolOption(func(c *toolConfig) {
		c.spec.PreRunInputs = append(c.spec.PreRunInputs, signals.PreRunInput{Key: key, Message: message, Schema: schema})
	})
}

// ForTenants limits the tool to the given tenants.
func ForTenants(tenants ...string) ToolOption {
	return toolOption(func(c *toolConfig) { c.spec.Tenants = append(c.spec.Tenants, tenants...) })
}

// WithScopes makes the tool require OAuth scopes: a caller whose access
// token does not grant every one of them does not see the tool in
// tools/list (nor in REST's GET /workflows), and its calls (and REST run
// starts) are refused with 403 insufficient_scope naming them, before any
// run starts. API keys and the development caller are not scoped and are
// not limited by it. Each scope must be an RFC 6749 scope token (printable
// ASCII without space, quote or backslash); NewTool refuses another. The
// scopes are published with the tool (signals.ToolSpec.Scopes) and
// advertised in the server's protected-resource metadata
// (scopes_supported).
func WithScopes(scopes ...string) ToolOption {
	return toolOption(func(c *toolConfig) { c.spec.Scopes = append(c.spec.Scopes, scopes...) })
}

// WithOutputSchema sets the tool's output schema (an object schema of the
// run's outputs) instead of the one NewTool derives from the output type.
func WithOutputSchema(schema json.RawMessage) ToolOption {
	return toolOption(func(c *toolConfig) { c.spec.OutputSchema, c.output = schema, true })
}

// WithInputSchema sets the tool's input schema (an object schema of its
// arguments) instead of the one NewTool derives from the input type: for
// a tool whose arguments are described elsewhere, such as a tool of
// another MCP server, whose input type is then json.RawMessage (the
// arguments as they came). It cannot be combined with SchemaOptions,
// which edit a derived schema.
func WithInputSchema(schema json.RawMessage) ToolOption {
	return toolOption(func(c *toolConfig) { c.input = schema })
}

// WithRunTimeout bounds each run of the tool to d: the server starts the
// run with d as its workflow execution timeout, and a run still open when d
// has passed fails with the code workflow_timed_out and a message naming
// d. d must be positive and at most catalog.MaxRunTimeout (NewTool
// reports another value in Err).
func WithRunTimeout(d time.Duration) ToolOption {
	return toolOption(func(c *toolConfig) {
		if d <= 0 && c.err == nil {
			c.err = fmt.Errorf("run timeout %s is not positive", d)
		}
		c.spec.RunTimeout = signals.Duration(d)
	})
}

// WithInlineWait sets how long a call of the tool that may take a task
// (an MCP client that declared the Tasks extension) waits for its run
// before it is answered with the task; a run that ends within it is
// answered with its result at once, so that a fast tool costs its client
// no poll. Zero answers the task at once. Without it the server's default
// applies (the poll interval: no client waits longer than it would have
// polled). d must be at least zero and at most catalog.MaxInlineWait
// (NewTool reports another value in Err).
func WithInlineWait(d time.Duration) ToolOption {
	return toolOption(func(c *toolConfig) {
		if d < 0 && c.err == nil {
			c.err = fmt.Errorf("inline wait %s is negative", d)
		}
		w := signals.Duration(d)
		c.spec.InlineWait = &w
	})
}

// WithHandoffAfter bounds how long a call of the tool that took no task
// (an MCP client that did not declare the Tasks extension) waits for its
// run before it is answered with a handoff: the run's status, its open
// questions and what to call next, the run going on. Without it the
// server's bound applies (OPENWOP_MAX_BLOCKING_WAIT, below the shortest
// common host limit). d must be positive and at most
// catalog.MaxHandoffAfter (NewTool reports another value in Err).
func WithHandoffAfter(d time.Duration) ToolOption {
	return toolOption(func(c *toolConfig) {
		if d <= 0 && c.err == nil {
			c.err = fmt.Errorf("handoff bound %s is not positive", d)
		}
		c.spec.HandoffAfter = signals.Duration(d)
	})
}

// WithResultLimit sets the tool's result limit: the size, in bytes of
// text, over which a run's result is answered with its head inline and a
// resource_link to the whole, which resources/read serves in pages of n
// bytes. Without it the server's limit applies (OPENWOP_RESULT_LIMIT,
// which fits the smallest host limit known); with it the tool's wins,
// below or above the server's, for every run the tool starts (a run keeps
// the limit of the version that started it). n must be from
// catalog.MinResultLimit to catalog.MaxResultLimit (NewTool reports
// another value in Err).
func WithResultLimit(n int) ToolOption {
	return toolOption(func(c *toolConfig) {
		if (n < catalog.MinResultLimit || n > catalog.MaxResultLimit) && c.err == nil {
			c.err = fmt.Errorf("result limit %d: want a number of bytes from %d to %d", n, catalog.MinResultLimit, catalog.MaxResultLimit)
		}
		c.spec.ResultLimit = n
	})
}

// WithVersioningBehavior sets how the tool's runs move between versions
// of a Temporal Worker Deployment when its worker is versioned
// (WorkerOptions.DeploymentName): workflow.VersioningBehaviorPinned, the
// default of Registry.Run, keeps each run on the build that started it
// until it ends, so that a new build may change the tool's steps without
// breaking runs in flight; workflow.VersioningBehaviorAutoUpgrade moves
// each open run to the deployment's current version at its next workflow
// task, so that every change of the tool's code must replay its histories
// (docs/upgrades.md). It changes nothing on an unversioned worker. Other
// values make NewTool report an error in Err.
func WithVersioningBehavior(b workflow.VersioningBehavior) ToolOption {
	return toolOption(func(c *toolConfig) {
		if b != workflow.VersioningBehaviorPinned && b != workflow.VersioningBehaviorAutoUpgrade && c.err == nil {
			c.err = fmt.Errorf("versioning behavior %d is neither pinned nor auto-upgrade", b)
		}
		c.behavior = b
	})
}

// annotate returns an option that edits the tool's annotations.
func annotate(edit func(a *signals.ToolAnnotations)) ToolOption {
	return toolOption(func(c *toolConfig) {
		if c.spec.Annotations == nil {
			c.spec.Annotations = &signals.ToolAnnotations{}
		}
		edit(c.spec.Annotations)
	})
}

// WithTitle sets the tool's human-readable title (annotations.title).
func WithTitle(title string) ToolOption {
	return annotate(func(a *signals.ToolAnnotations) { a.Title = title })
}

// WithReadOnlyHint marks a tool that changes nothing outside its run
// (annotations.readOnlyHint).
func WithReadOnlyHint() ToolOption {
	return annotate(func(a *signals.ToolAnnotations) { a.ReadOnlyHint = true })
}

// WithDestructiveHint says whether a tool that is not read-only may
// destroy or overwrite something (annotations.destructiveHint; MCP
// assumes it may when a tool does not say).
func WithDestructiveHint(destructive bool) ToolOption {
	return annotate(func(a *signals.ToolAnnotations) { a.DestructiveHint = &destructive })
}

// WithIdempotentHint marks a tool that has no further effect when called
// again with the same arguments (annotations.idempotentHint).
func WithIdempotentHint() ToolOption {
	return annotate(func(a *signals.ToolAnnotations) { a.IdempotentHint = true })
}

// WithOpenWorldHint says whether the tool reaches an open world of
// entities, such as the web, or a closed one (annotations.openWorldHint;
// MCP assumes an open one when a tool does not say).
func WithOpenWorldHint(open bool) ToolOption {
	return annotate(func(a *signals.ToolAnnotations) { a.OpenWorldHint = &open })
}

// NewTool makes a tool named name (the Temporal workflow type and the MCP
// tool name) from an ordinary workflow function. The input schema is derived
// from In with jsonschema.For (field descriptions from `jsonschema` tags,
// fields without omitempty required), then edited by the SchemaOptions
// among opts (WithRange, WithLength, WithEnum, WithDefault,
// WithDescription, WithSchema), unless WithInputSchema gives it as is.
// The harness decodes the arguments into In, runs fn and turns its output
// into the run's outputs: an object as is, anything else as
// {"result": value}.
//
// The output schema is derived from Out the same way (see outputSchema):
// a struct's schema as is, a scalar's or a slice's as {"result": schema}.
// Out of an interface, pointer or map type, or one with its own JSON
// encoding, gets none unless WithOutputSchema gives one.
//
// A tool that cannot be built (bad name, schema) carries the error in Err,
// and NewRegistry refuses it.
func NewTool[In, Out any](name, description string, fn func(ctx workflow.Context, in In) (Out, error), opts ...ToolOption) Tool {
	c := toolConfig{spec: signals.ToolSpec{Name: name, Description: description, TaskSupport: signals.TaskOptional}}
	for _, o := range opts {
		if o != nil {
			o.applyTool(&c)
		}
	}
	t := Tool{spec: c.spec, behavior: c.behavior}
	if !catalog.ValidName(name) {
		t.err = fmt.Errorf("invalid tool name %q", name)
		return t
	}
	if c.err != nil {
		t.err = fmt.Errorf("tool %s: %w", name, c.err)
		return t
	}
	raw, err := inputSchema[In](c)
	if err != nil {
		t.err = fmt.Errorf("tool %s: %w", name, err)
		return t
	}
	t.spec.InputSchema = raw
	if !c.output {
		if t.spec.OutputSchema, err = outputSchema[Out](); err != nil {
			t.err = fmt.Errorf("tool %s: output schema: %w", name, err)
			return t
		}
	}
	// The same compiler as the server's checks what the server will serve.
	if _, err := catalog.Compile(t.spec); err != nil {
		t.err = err
		return t
	}
	t.run = func(ctx workflow.Context, req signals.StartRequest) (signals.RunRecord, error) {
		req.Tool = cmp.Or(req.Tool, name)
		return start(ctx, req, func(ctx workflow.Context, args json.RawMessage) (any, error) {
			var in In
			if len(args) > 0 && string(args) != "null" {
				if err := json.Unmarshal(args, &in); err != nil {
					return nil, Fail(CodeInvalidArguments, fmt.Sprintf("arguments of %s do not decode: %v", name, err))
				}
			}
			out, err := fn(ctx, in)
			if err != nil {
				return nil, err
			}
			return out, nil
		})
	}
	return t
}

// inputSchema is the tool's input schema: the one WithInputSchema gave,
// or the one derived from In and edited by the SchemaOptions of c.
func inputSchema[In any](c toolConfig) (json.RawMessage, error) {
	if c.input != nil {
		if len(c.edits) > 0 {
			return nil, errors.New("input schema: WithInputSchema cannot be combined with schema options")
		}
		return c.input, nil
	}
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if schema.Type != "object" {
		return nil, fmt.Errorf("input type %T is not a struct", *new(In))
	}
	if err := applyOptions(schema, c.edits); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("encode input schema: %w", err)
	}
	return raw, nil
}

// outputSchema derives the schema of the outputs a tool with output type
// Out produces (encodeOutput): a struct's object schema, or for a type the
// harness wraps as {"result": value} (a scalar, a slice) an object schema
// with that one required property. It returns nil for a type whose
// encoding the schema cannot tell (an interface, a pointer or a map,
// which may encode as null or as an object; a json.Marshaler).
func outputSchema[Out any]() (json.RawMessage, error) {
	typ := reflect.TypeFor[Out]()
	if typ.Implements(reflect.TypeFor[json.Marshaler]()) && typ != reflect.TypeFor[time.Time]() {
		return nil, nil
	}
	switch typ.Kind() {
	case reflect.Interface, reflect.Pointer, reflect.Map:
		return nil, nil
	}
	schema, err := jsonschema.For[Out](outputForOptions())
	if err != nil {
		return nil, err
	}
	if typ.Kind() != reflect.Struct {
		schema = &jsonschema.Schema{
			Type:                 "object",
			Properties:           map[string]*jsonschema.Schema{"result": schema},
			Required:             []string{"result"},
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		}
	}
	return json.Marshal(schema)
}

// outputForOptions maps the types whose JSON encoding jsonschema.For
// would describe wrongly: json.RawMessage holds any JSON, []byte encodes
// as a base64 string.
func outputForOptions() *jsonschema.ForOptions {
	return &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
		reflect.TypeFor[[]byte]():          {Types: []string{"null", "string"}},
	}}
}

// Registry maps tool names to tools. It is built once and read-only after,
// so the server (tools/list) and the worker (registration) share it.
type Registry struct {
	tools      []Tool // sorted by name
	activities []any
	// set are tools beside tools that change while the worker runs
	// (WithToolSet); nil for none.
	set ToolSet
}

// NewRegistry returns a registry of tools, whose workflows Register
// registers together with activities (structs whose methods are activities,
// or activity functions; struct methods with other signatures are skipped).
func NewRegistry(tools []Tool, activities ...any) (*Registry, error) {
	r := &Registry{tools: slices.Clone(tools), activities: activities}
	var errs []error
	for _, t := range r.tools {
		if t.err != nil {
			errs = append(errs, t.err)
		}
	}
	for _, name := range catalog.SortByName(r.tools, func(t Tool) string { return t.spec.Name }) {
		errs = append(errs, fmt.Errorf("tool %s registered twice", name))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("tool registry: %w", err)
	}
	return r, nil
}

// Specs returns the spec of every tool, sorted by name.
func (r *Registry) Specs() []signals.ToolSpec {
	out := make([]signals.ToolSpec, len(r.tools))
	for i, t := range r.tools {
		out[i] = t.Spec()
	}
	return out
}

// Lookup returns the spec of the tool named name.
func (r *Registry) Lookup(name string) (signals.ToolSpec, bool) {
	i, ok := slices.BinarySearchFunc(r.tools, name, func(t Tool, n string) int { return strings.Compare(t.spec.Name, n) })
	if !ok {
		return signals.ToolSpec{}, false
	}
	return r.tools[i].Spec(), true
}

// Register registers every tool workflow (workflow type = tool name) and the
// registry's activities with w (a worker.Worker).
func (r *Registry) Register(w worker.Registry) {
	r.RegisterWorkflows(w)
	for _, a := range r.activities {
		// Struct methods that are not activities (accessors such as
		// tools.Activities.Cancelled in examples/tools) are skipped.
		w.RegisterActivityWithOptions(a, activity.RegisterOptions{SkipInvalidStructFunctions: true})
	}
}

// RegisterWorkflows registers every tool workflow (workflow type = tool
// name) with w, e.g. a worker.WorkflowReplayer, with the versioning
// behavior WithVersioningBehavior gave it (none: the worker's
// DeploymentOptions.DefaultVersioningBehavior, which a versioned worker
// must then set).
func (r *Registry) RegisterWorkflows(w worker.WorkflowRegistry) {
	for _, t := range r.tools {
		w.RegisterWorkflowWithOptions(t.run, workflow.RegisterOptions{Name: t.spec.Name, VersioningBehavior: t.behavior})
	}
}

func cloneSpec(s signals.ToolSpec) signals.ToolSpec { return s.Clone() }
