package catalog

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
)

// Source is where the mount and the REST API find tools. Implementations
// are safe for concurrent use.
type Source interface {
	// Tools returns the tools that can be called now, sorted by name.
	Tools(ctx context.Context) ([]*Tool, error)
	// Lookup returns the tool named name. It fails with an error matching
	// ErrUnknownTool when no such tool exists, and with an
	// *UnavailableError when the tool exists but cannot be called now (no
	// live worker, conflicting publications).
	Lookup(ctx context.Context, name string) (*Tool, error)
	// ForCall is Lookup for a call about to start a run: the tool returned
	// is the one the run starts as. A source that follows Worker
	// Deployment versions chooses the version here (during a ramp, with
	// the ramp's probability; the tool returned is pinned to it, see
	// Tool.Pinned), and a source that can tell confirms that the tool is
	// still served, falling back on the next choice when it is not.
	ForCall(ctx context.Context, name string) (*Tool, error)
	// OtherVersions returns the specs, other than the listed one, of the
	// tool named name that workers of versions taking no new runs serve,
	// or served until lately, as of the last reading; none when there is
	// no rollout (and always none for a source that knows one version of
	// each tool). Their runs were started with those specs, and are
	// checked against them (CheckOutput). For Live, lately is its
	// RecentFor (15 minutes by default) after the version's publication
	// closed: at once when its worker stops, DeadAfter (15 minutes) after
	// its last poll when it crashed.
	OtherVersions(name string) []*Tool
}

// ErrUnknownTool is the error of a lookup of a tool nobody publishes.
var ErrUnknownTool = errors.New("unknown tool")

// UnavailableError is the error of a lookup of a tool that exists but
// cannot be called now. Its message says why and what to do.
type UnavailableError struct {
	// Tool is the tool's name.
	Tool string
	// Reason says why, e.g. "no live worker serves task queue \"q\"; start
	// a worker that serves it".
	Reason string
	// TaskQueues are the task queues the tool's runs would start on.
	TaskQueues []string
	// Tenants, when non-empty, are the only tenants the tool is offered
	// to; others must be told it does not exist.
	Tenants []string
}

// Visible reports whether the tool is offered to tenant.
func (e *UnavailableError) Visible(tenant string) bool {
	return signals.ToolSpec{Tenants: e.Tenants}.VisibleTo(tenant)
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("tool %q is unavailable: %s", e.Tool, e.Reason)
}

// nameGrammar is the grammar of tool names (MCP tool names and OpenWOP
// workflow ids both accept it).
var nameGrammar = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// ValidName reports whether name is a valid tool name.
func ValidName(name string) bool { return nameGrammar.MatchString(name) }

// Tool is a tool ready to serve: its spec and its compiled input schemas.
// Make one with Compile. It is immutable.
type Tool struct {
	spec   signals.ToolSpec
	schema json.RawMessage
	args   *jsonschema.Resolved
	inputs map[string]*jsonschema.Resolved
	output *jsonschema.Resolved // nil: the spec declares no output schema
	// pin is the version a run of the tool starts on (Pinned); nil: where
	// Temporal routes it.
	pin *signals.DeploymentVersion
	// alt is, during a ramp, the pinned tool of the ramp's other version
	// (ForArguments).
	alt *Tool
}

// emptyObject is the schema of a tool or input that declares none.
var emptyObject = json.RawMessage(`{"type":"object"}`)

// Compile checks a spec and compiles its input schemas: the tool's
// arguments and each pre-run input.
func Compile(spec signals.ToolSpec) (*Tool, error) {
	if !ValidName(spec.Name) {
		return nil, fmt.Errorf("tool name %q does not match %s", spec.Name, nameGrammar)
	}
	if strings.HasPrefix(spec.Name, signals.ReservedToolPrefix) {
		return nil, fmt.Errorf("tool name %q: the prefix %q is reserved for the server's own tools", spec.Name, signals.ReservedToolPrefix)
	}
	if spec.Description == "" {
		return nil, fmt.Errorf("tool %s: empty description", spec.Name)
	}
	switch spec.TaskSupport {
	case signals.TaskForbidden, signals.TaskOptional, signals.TaskRequired:
	case "":
		spec.TaskSupport = signals.TaskOptional
	default:
		return nil, fmt.Errorf("tool %s: invalid task support %q", spec.Name, spec.TaskSupport)
	}
	if !spec.Contract.Valid() {
		return nil, fmt.Errorf("tool %s: unknown contract %q (want %s or %s)", spec.Name, spec.Contract, signals.ContractOpenWOP, signals.ContractPlain)
	}
	if spec.Plain() && (spec.CanSuspend || len(spec.PreRunInputs) > 0) {
		return nil, fmt.Errorf("tool %s: a %s workflow cannot ask for input (canSuspend, preRunInputs)", spec.Name, signals.ContractPlain)
	}
	for _, sc := range spec.Scopes {
		if !signals.ValidScope(sc) {
			return nil, fmt.Errorf("tool %s: scope %q is not an OAuth scope token (RFC 6749: printable ASCII without space, quote or backslash)", spec.Name, sc)
		}
	}
	if a := spec.Annotations; a != nil && a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint {
		return nil, fmt.Errorf("tool %s: annotations: a read-only tool cannot be destructive (readOnlyHint and destructiveHint both true)", spec.Name)
	}
	if err := checkRunTimeout(spec); err != nil {
		return nil, err
	}
	if err := checkInlineWait(spec); err != nil {
		return nil, err
	}
	if err := checkHandoffAfter(spec); err != nil {
		return nil, err
	}
	if err := CheckResultLimit(spec.ResultLimit); err != nil {
		return nil, fmt.Errorf("tool %s: %w", spec.Name, err)
	}
	spec = withoutNullSchemas(spec)
	t := &Tool{spec: cloneSpec(spec), schema: spec.InputSchema}
	if len(bytes.TrimSpace(t.schema)) == 0 {
		t.schema = emptyObject
	}
	var err error
	if t.args, err = CompileSchema(t.schema); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", spec.Name, err)
	}
	if len(bytes.TrimSpace(spec.OutputSchema)) > 0 {
		if t.output, err = CompileSchema(spec.OutputSchema); err != nil {
			return nil, fmt.Errorf("tool %s: output schema: %w", spec.Name, err)
		}
	}
	for _, in := range spec.PreRunInputs {
		if in.Key == "" {
			return nil, fmt.Errorf("tool %s: a pre-run input has no key", spec.Name)
		}
		if _, dup := t.inputs[in.Key]; dup {
			return nil, fmt.Errorf("tool %s: pre-run input %q given twice", spec.Name, in.Key)
		}
		schema := in.Schema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = emptyObject
		}
		rs, err := CompileSchema(schema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: pre-run input %q schema: %w", spec.Name, in.Key, err)
		}
		if t.inputs == nil {
			t.inputs = make(map[string]*jsonschema.Resolved)
		}
		t.inputs[in.Key] = rs
	}
	return t, nil
}

// withoutNullSchemas returns spec with its schemas written as JSON null
// (as encoding/json writes a spec without them, e.g. a tools file written
// back or a publication) removed: null declares no schema, as an absent
// one does.
func withoutNullSchemas(spec signals.ToolSpec) signals.ToolSpec {
	spec.InputSchema, spec.OutputSchema = nonNull(spec.InputSchema), nonNull(spec.OutputSchema)
	if len(spec.PreRunInputs) > 0 {
		inputs := make([]signals.PreRunInput, len(spec.PreRunInputs))
		for i, in := range spec.PreRunInputs {
			in.Schema = nonNull(in.Schema)
			inputs[i] = in
		}
		spec.PreRunInputs = inputs
	}
	return spec
}

// nonNull is raw, or nil when raw is JSON null.
func nonNull(raw json.RawMessage) json.RawMessage {
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	return raw
}

// MaxRunTimeout bounds a tool's run timeout (signals.ToolSpec.RunTimeout):
// a longer one is more likely a mistake (a unit slip) than a run meant to
// take over a year.
const MaxRunTimeout = 366 * 24 * time.Hour

// checkRunTimeout checks a spec's run timeout: zero (none), or positive
// and at most MaxRunTimeout.
func checkRunTimeout(spec signals.ToolSpec) error {
	d := time.Duration(spec.RunTimeout)
	switch {
	case d < 0:
		return fmt.Errorf("tool %s: run timeout %s is negative (want a positive duration, or none)", spec.Name, d)
	case d > MaxRunTimeout:
		return fmt.Errorf("tool %s: run timeout %s is longer than the maximum %s", spec.Name, d, MaxRunTimeout)
	}
	return nil
}

// MaxInlineWait bounds a tool's inline wait (signals.ToolSpec.InlineWait):
// a call that waits longer is a blocking call in all but name, and a
// client that took a task expects its handle soon.
const MaxInlineWait = time.Minute

// checkInlineWait checks a spec's inline wait: none (the server's
// default), zero, or positive and at most MaxInlineWait.
func checkInlineWait(spec signals.ToolSpec) error {
	if spec.InlineWait == nil {
		return nil
	}
	switch d := time.Duration(*spec.InlineWait); {
	case d < 0:
		return fmt.Errorf("tool %s: inline wait %s is negative (want 0s for none, or a positive duration)", spec.Name, d)
	case d > MaxInlineWait:
		return fmt.Errorf("tool %s: inline wait %s is longer than the maximum %s", spec.Name, d, MaxInlineWait)
	}
	return nil
}

// MaxHandoffAfter bounds a tool's handoff bound (signals.ToolSpec.HandoffAfter):
// the longest a known MCP host keeps a tool call open (docs/protocol.md,
// "Host limits").
const MaxHandoffAfter = 10 * time.Minute

// checkHandoffAfter checks a spec's handoff bound: zero (the server's) or
// positive and at most MaxHandoffAfter.
func checkHandoffAfter(spec signals.ToolSpec) error {
	switch d := time.Duration(spec.HandoffAfter); {
	case d < 0:
		return fmt.Errorf("tool %s: handoff bound %s is negative (want a positive duration, or none)", spec.Name, d)
	case d > MaxHandoffAfter:
		return fmt.Errorf("tool %s: handoff bound %s is longer than the maximum %s", spec.Name, d, MaxHandoffAfter)
	}
	return nil
}

// The bounds of a tool's result limit (signals.ToolSpec.ResultLimit), the
// range OPENWOP_RESULT_LIMIT takes: a page of a result must carry
// something, and a tool may raise its limit above the server's as far as
// an operator could raise the server's (a result that large exceeds
// Temporal's default payload limit anyway).
const (
	MinResultLimit = 1_000
	MaxResultLimit = 100_000_000
)

// CheckResultLimit checks a result limit in bytes: zero (the server's) or
// from MinResultLimit to MaxResultLimit.
func CheckResultLimit(n int) error {
	if n == 0 || n >= MinResultLimit && n <= MaxResultLimit {
		return nil
	}
	return fmt.Errorf("result limit %d: want a number of bytes from %d to %d, or 0 for the server's", n, MinResultLimit, MaxResultLimit)
}

// CompileSchema compiles a JSON Schema whose type is object: the
// contract's compiler (answers.CompileSchema), which the catalog compiles
// every tool's schemas with.
func CompileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	return answers.CompileSchema(raw)
}

// Name is the tool's name.
func (t *Tool) Name() string { return t.spec.Name }

// Pinned is the Worker Deployment version a new run of the tool is to
// start on, whatever Temporal's routing says, and whose spec the tool's
// is: ForCall chose it, the current version of the tool's
// deployment or, during a ramp, the version this call goes to
// (docs/upgrades.md, "Ramping"). nil: the run starts where Temporal
// routes it (an unversioned tool, or routing the catalog cannot read).
func (t *Tool) Pinned() *signals.DeploymentVersion {
	if t.pin == nil {
		return nil
	}
	v := *t.pin
	return &v
}

// pinnedTo is t to be started on version v (Pinned), with alt the tool
// of the ramp's other version (nil: none).
func (t *Tool) pinnedTo(v signals.DeploymentVersion, alt *Tool) *Tool {
	c := *t
	c.pin, c.alt = &v, alt
	return &c
}

// ForArguments is the tool a call with the arguments raw starts as: t;
// or, when ForCall chose t's version during a ramp and raw does not
// match t's input schema but matches the one of the ramp's other version,
// that version's tool. So a call whose arguments match the listed spec is
// not refused because the ramp chose a version that changed them.
func (t *Tool) ForArguments(raw json.RawMessage) *Tool {
	if t.alt == nil {
		return t
	}
	if _, err := t.ValidateArguments(raw); err == nil {
		return t
	}
	if _, err := t.alt.ValidateArguments(raw); err == nil {
		return t.alt
	}
	return t
}

// Spec returns a copy of the tool's spec.
func (t *Tool) Spec() signals.ToolSpec { return cloneSpec(t.spec) }

// InputSchema is the tool's input schema ({"type":"object"} when the spec
// has none). Do not modify it.
func (t *Tool) InputSchema() json.RawMessage { return t.schema }

// OutputSchema is the tool's output schema, or nil when it declares none.
// Do not modify it.
func (t *Tool) OutputSchema() json.RawMessage { return t.spec.OutputSchema }

// ResultError says why a completed run's result does not match its
// tool's output schema. The mount answers it as a tool error.
type ResultError struct {
	// Tool is the tool's name.
	Tool string
	// Err is the schema validation error, or says what is missing.
	Err error
}

func (e *ResultError) Error() string {
	return fmt.Sprintf("tool %q returned a result that does not match its output schema: %v", e.Tool, e.Err)
}

// Unwrap returns the schema validation error.
func (e *ResultError) Unwrap() error { return e.Err }

// CheckResult checks the structuredContent of a completed result against
// the tool's output schema. A tool that declares none accepts any result;
// one that declares one fails with a *ResultError when structured is
// absent, not a JSON object, or does not match.
func (t *Tool) CheckResult(structured json.RawMessage) error {
	if t.output == nil {
		return nil
	}
	structured = bytes.TrimSpace(structured)
	if len(structured) == 0 || bytes.Equal(structured, []byte("null")) {
		return &ResultError{Tool: t.spec.Name, Err: errors.New("the result has no structuredContent")}
	}
	var v any
	if err := json.Unmarshal(structured, &v); err != nil {
		return &ResultError{Tool: t.spec.Name, Err: fmt.Errorf("structuredContent is not valid JSON: %w", err)}
	}
	if err := t.output.Validate(v); err != nil {
		return &ResultError{Tool: t.spec.Name, Err: err}
	}
	return nil
}

// ArgumentsError says why tool arguments or an input answer were refused.
type ArgumentsError struct {
	// Tool is the tool's name.
	Tool string
	// Problem is a description of what is wrong.
	Problem string
	// Err is the schema validation error, when there is one.
	Err error
}

func (e *ArgumentsError) Error() string { return fmt.Sprintf("tool %q: %s", e.Tool, e.Problem) }

// Unwrap returns the schema validation error.
func (e *ArgumentsError) Unwrap() error { return e.Err }

// Problem is what an arguments error says is wrong, without the tool's
// name: the schema validation error, worded as a sentence about the field
// (answers.Explain), when there is one. Any other error is its own text.
func Problem(err error) string {
	var ae *ArgumentsError
	if !errors.As(err, &ae) {
		return err.Error()
	}
	if ae.Err != nil {
		return answers.Explain(ae.Err)
	}
	return ae.Problem
}

// ValidateArguments checks raw tool arguments against the input schema and
// returns them as a JSON object (absent or null arguments are {}).
// Arguments larger than MaxArgumentsBytes, or holding a number a 64-bit
// float cannot represent, are refused with an ArgumentsError that says so.
func (t *Tool) ValidateArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = json.RawMessage("{}")
	}
	if err := t.checkArgumentsLimits("arguments", raw); err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, &ArgumentsError{Tool: t.spec.Name, Problem: fmt.Sprintf("arguments are not valid JSON: %v", err)}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, &ArgumentsError{Tool: t.spec.Name, Problem: "arguments must be a JSON object"}
	}
	if err := t.args.Validate(v); err != nil {
		return nil, &ArgumentsError{Tool: t.spec.Name, Problem: "invalid arguments: " + answers.Explain(err), Err: err}
	}
	return raw, nil
}

// ValidateInput checks the answer to the pre-run input key against its
// schema and returns it as JSON.
func (t *Tool) ValidateInput(key string, content json.RawMessage) (json.RawMessage, error) {
	rs, ok := t.inputs[key]
	if !ok {
		return nil, &ArgumentsError{Tool: t.spec.Name, Problem: fmt.Sprintf("no pre-run input %q", key)}
	}
	content = bytes.TrimSpace(content)
	if len(content) == 0 || bytes.Equal(content, []byte("null")) {
		content = json.RawMessage("{}")
	}
	if err := t.checkArgumentsLimits(fmt.Sprintf("input %q", key), content); err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(content, &v); err != nil {
		return nil, &ArgumentsError{Tool: t.spec.Name, Problem: fmt.Sprintf("input %q is not valid JSON: %v", key, err)}
	}
	if err := rs.Validate(v); err != nil {
		return nil, &ArgumentsError{Tool: t.spec.Name, Problem: fmt.Sprintf("input %q: %s", key, answers.Explain(err)), Err: err}
	}
	return content, nil
}

// Static is a Source of a fixed list of tools, all always available.
type Static struct {
	tools []*Tool // sorted by name
}

// NewStatic compiles specs into a Static source. Names must be unique.
func NewStatic(specs ...signals.ToolSpec) (*Static, error) {
	s := &Static{}
	var errs []error
	for _, spec := range specs {
		t, err := Compile(spec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.tools = append(s.tools, t)
	}
	for _, name := range SortByName(s.tools, (*Tool).Name) {
		errs = append(errs, fmt.Errorf("tool %s given twice", name))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return s, nil
}

// SortByName sorts tools by the name name returns and returns the names
// that more than one of them has, once each time they repeat. Static and
// workflows.NewRegistry check their tools with it.
func SortByName[T any](tools []T, name func(T) string) (twice []string) {
	sort.Slice(tools, func(i, j int) bool { return name(tools[i]) < name(tools[j]) })
	for i := 1; i < len(tools); i++ {
		if n := name(tools[i]); n == name(tools[i-1]) {
			twice = append(twice, n)
		}
	}
	return twice
}

// Tools implements Source.
func (s *Static) Tools(context.Context) ([]*Tool, error) { return slices.Clone(s.tools), nil }

// Lookup implements Source.
func (s *Static) Lookup(_ context.Context, name string) (*Tool, error) {
	i, ok := slices.BinarySearchFunc(s.tools, name, func(t *Tool, n string) int { return strings.Compare(t.spec.Name, n) })
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	return s.tools[i], nil
}

// ForCall implements Source: a static tool is always served as it is.
func (s *Static) ForCall(ctx context.Context, name string) (*Tool, error) { return s.Lookup(ctx, name) }

// OtherVersions implements Source: a static tool has one version.
func (s *Static) OtherVersions(string) []*Tool { return nil }

func cloneSpec(s signals.ToolSpec) signals.ToolSpec { return s.Clone() }

// canonical is the spec's canonical JSON form: two specs are the same
// tool when their canonical forms are equal, whatever the key order or
// spacing of their schemas.
func canonical(spec signals.ToolSpec) string {
	spec.TaskSupport = cmp.Or(spec.TaskSupport, signals.TaskOptional)
	spec.Contract = cmp.Or(spec.Contract, signals.ContractOpenWOP)
	if spec.WorkflowType == spec.Name {
		spec.WorkflowType = ""
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v) // map keys sorted
	return string(out)
}

// differences names the top-level spec fields in which a and b differ.
func differences(a, b signals.ToolSpec) []string {
	var ma, mb map[string]json.RawMessage
	_ = json.Unmarshal([]byte(canonical(a)), &ma)
	_ = json.Unmarshal([]byte(canonical(b)), &mb)
	var out []string
	for k, v := range ma {
		if w, ok := mb[k]; !ok || !bytes.Equal(v, w) {
			out = append(out, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
