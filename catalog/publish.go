package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/openwop/temporal-mcp/signals"
)

// ConflictError is the error of a Publish that would give a tool a second,
// different spec while the worker that published the first still polls.
type ConflictError struct {
	// Conflicts holds one line per conflicting tool.
	Conflicts []string
}

func (e *ConflictError) Error() string {
	return "conflicting tool publications: " + strings.Join(e.Conflicts, "; ")
}

// Publish records in Temporal that the worker pub.Identity serves
// pub.Tools on pub.TaskQueue, replacing that worker's earlier publication.
// pub.Identity must be the identity the worker's pollers report
// (worker.Options.Identity, or the client's). Each tool's TaskQueue is set
// to pub.TaskQueue and PublishedAt to now.
//
// It fails with a *ConflictError, and publishes nothing, when another live
// worker publishes a different spec under one of the same tool names,
// unless the two are a rollout: two versions of one Worker Deployment, or
// an unversioned and a versioned worker of one task queue
// (docs/catalog.md#versions).
func Publish(ctx context.Context, c client.Client, pub signals.Publication) error {
	if pub.TaskQueue == "" || pub.Identity == "" {
		return errors.New("publish tools: the task queue and the worker identity are required")
	}
	pub.Tools = cloneTools(pub.Tools)
	seen := map[string]bool{}
	for i := range pub.Tools {
		t := &pub.Tools[i]
		if t.TaskQueue != "" && t.TaskQueue != pub.TaskQueue {
			return fmt.Errorf("publish tools: tool %q names task queue %q, not the worker's %q", t.Name, t.TaskQueue, pub.TaskQueue)
		}
		t.TaskQueue = pub.TaskQueue
		if _, err := Compile(*t); err != nil {
			return fmt.Errorf("publish tools: %w", err)
		}
		if seen[t.Name] {
			return fmt.Errorf("publish tools: tool %q given twice", t.Name)
		}
		seen[t.Name] = true
	}
	if err := checkConflicts(ctx, c, pub); err != nil {
		return err
	}
	pub.PublishedAt = time.Now().UTC()
	opts := client.StartWorkflowOptions{
		ID:                       signals.PublicationID(pub.TaskQueue, pub.Identity),
		TaskQueue:                signals.PublicationTaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Memo:                     map[string]any{signals.MemoPublication: pub},
		StaticSummary:            fmt.Sprintf("Tools of worker %s on task queue %s: %s", pub.Identity, pub.TaskQueue, toolNames(pub.Tools)),
		// Out of the operator's list of runs (signals.PublicationDivision).
		TypedSearchAttributes: temporal.NewSearchAttributes(saDivision.ValueSet(signals.PublicationDivision)),
	}
	_, err := c.ExecuteWorkflow(ctx, opts, signals.PublicationWorkflowType)
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) && strings.Contains(invalid.Error(), signals.NamespaceDivisionAttribute) {
		// A server that does not let clients set it: the publication is
		// listed among the runs, and works the same.
		opts.TypedSearchAttributes = temporal.SearchAttributes{}
		_, err = c.ExecuteWorkflow(ctx, opts, signals.PublicationWorkflowType)
	}
	if err != nil {
		return fmt.Errorf("publish tools on task queue %q: %w", pub.TaskQueue, err)
	}
	return nil
}

// saDivision is Temporal's namespace division search attribute, which a
// publication sets to keep out of the default workflow lists.
var saDivision = temporal.NewSearchAttributeKeyKeyword(signals.NamespaceDivisionAttribute)

// Published reports whether the publication of the worker identity on
// taskQueue is running with exactly the tools of pub (a worker checks it
// periodically and publishes again when it is not).
func Published(ctx context.Context, c client.Client, pub signals.Publication) (bool, error) {
	info, err := describeRunning(ctx, c, pub)
	if info == nil || err != nil {
		return false, err
	}
	got, ok := decodePublication(converter.GetDefaultDataConverter(), info)
	if !ok || len(got.pub.Tools) != len(pub.Tools) {
		return false, nil
	}
	for i := range pub.Tools {
		want := pub.Tools[i]
		want.TaskQueue = pub.TaskQueue
		if canonical(want) != canonical(got.pub.Tools[i]) {
			return false, nil
		}
	}
	return true, nil
}

// describeRunning describes the workflow of the publication pub and
// returns its execution info while it runs (nil when it is missing or
// closed).
func describeRunning(ctx context.Context, c client.Client, pub signals.Publication) (*workflowpb.WorkflowExecutionInfo, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, signals.PublicationID(pub.TaskQueue, pub.Identity), "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("describe tool publication: %w", err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, nil
	}
	return info, nil
}

// Withdraw removes the publication of the worker identity on taskQueue,
// so its tools leave the catalog at once. A missing publication is no
// error.
func Withdraw(ctx context.Context, c client.Client, taskQueue, identity string) error {
	err := c.TerminateWorkflow(ctx, signals.PublicationID(taskQueue, identity), "", "openwop: the worker stopped")
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("withdraw tools of task queue %q: %w", taskQueue, err)
	}
	return nil
}

// checkConflicts fails when a live worker other than pub's publishes a
// different spec under one of pub's tool names.
func checkConflicts(ctx context.Context, c client.Client, pub signals.Publication) error {
	others, err := listPublications(ctx, c, time.Time{})
	if err != nil {
		return fmt.Errorf("publish tools: %w", err)
	}
	mine := map[string]signals.ToolSpec{}
	for _, t := range pub.Tools {
		mine[t.Name] = t
	}
	queues := map[string]bool{}
	var rivals []listed
	for _, o := range others {
		if o.pub.TaskQueue == pub.TaskQueue && o.pub.Identity == pub.Identity {
			continue // this worker's own earlier publication
		}
		if rollout(o.pub, pub) {
			continue // another version: the catalog lists the current one
		}
		for _, t := range o.pub.Tools {
			if _, ok := mine[t.Name]; ok {
				rivals = append(rivals, o)
				queues[o.pub.TaskQueue] = true
				break
			}
		}
	}
	if len(rivals) == 0 {
		return nil
	}
	polls, err := pollersOf(ctx, c, queues)
	if err != nil {
		return fmt.Errorf("publish tools: %w", err)
	}
	now := time.Now()
	var lines []string
	for _, o := range rivals {
		if !polls[o.pub.TaskQueue].live(o.pub.Identity, now, DefaultLiveWindow) {
			continue // its worker is gone
		}
		var differ []string
		for _, t := range o.pub.Tools {
			m, ok := mine[t.Name]
			if !ok {
				continue
			}
			t.TaskQueue = o.pub.TaskQueue
			if canonical(m) != canonical(t) {
				differ = append(differ, fmt.Sprintf("tool %q is already published by %s with a different %s",
					t.Name, publisher(o.pub), strings.Join(differences(t, m), ", ")))
			}
		}
		if len(differ) == 0 {
			continue
		}
		// The listing comes from visibility, which lags behind (on SQL
		// visibility a publication withdrawn a moment ago may still be
		// listed open): a rival that differs is confirmed running first.
		if info, err := describeRunning(ctx, c, o.pub); err != nil {
			return fmt.Errorf("publish tools: %w", err)
		} else if info != nil {
			lines = append(lines, differ...)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	sort.Strings(lines)
	return &ConflictError{Conflicts: lines}
}

// LoadDeclarations reads a declaration file: a JSON array of tool specs
// (docs/catalog.md), each with a taskQueue and a contract, for workflows
// that do not publish their tools themselves. workflowType defaults to the
// name.
func LoadDeclarations(path string) ([]signals.ToolSpec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tool declarations: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var specs []signals.ToolSpec
	if err := dec.Decode(&specs); err != nil {
		return nil, fmt.Errorf("tool declarations %s: %w", path, err)
	}
	for i := range specs {
		s := &specs[i]
		if s.TaskQueue == "" {
			return nil, fmt.Errorf("tool declarations %s: tool %q has no taskQueue", path, s.Name)
		}
		if _, err := Compile(*s); err != nil {
			return nil, fmt.Errorf("tool declarations %s: %w", path, err)
		}
		if s.Contract == "" {
			// Elsewhere an empty contract means openwop; a declaration
			// says which it is, so that it has one meaning.
			return nil, fmt.Errorf(`tool declarations %s: tool %q has no contract: set "contract": %q (the workflow takes the arguments object and returns any JSON value) or %q (it implements docs/contract.md)`,
				path, s.Name, signals.ContractPlain, signals.ContractOpenWOP)
		}
	}
	return specs, nil
}

func cloneTools(in []signals.ToolSpec) []signals.ToolSpec {
	out := make([]signals.ToolSpec, len(in))
	for i, t := range in {
		out[i] = cloneSpec(t)
	}
	return out
}

func toolNames(tools []signals.ToolSpec) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
