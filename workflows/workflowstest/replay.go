package workflowstest

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
)

// Replay replays the workflow history recorded in file (the JSON that
// `temporal workflow show --output json` writes) with the tools of reg,
// and returns the replay's error: one that names TMPRL1100 when the code
// no longer emits the commands the history records (a change that needs a
// workflow.GetVersion guard, docs/upgrades.md). It also returns the tool
// (workflow type) the history is of.
func Replay(reg *workflows.Registry, file string) (tool string, err error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		return "", fmt.Errorf("replay %s: %w", file, err)
	}
	if len(hist.Events) == 0 {
		return "", fmt.Errorf("replay %s: the history is empty", file)
	}
	started := hist.Events[0].GetWorkflowExecutionStartedEventAttributes()
	if started == nil || started.GetWorkflowId() == "" {
		return "", fmt.Errorf("replay %s: the first event is not a start event with a workflow id", file)
	}
	tool = started.GetWorkflowType().GetName()
	if err := replayHistory(reg, hist, started.GetWorkflowId(), started.GetOriginalExecutionRunId()); err != nil {
		return tool, fmt.Errorf("replay %s: %w", file, err)
	}
	return tool, nil
}

// replayHistory replays hist, the history of the run (workflowID, runID),
// with the tools of reg.
func replayHistory(reg *workflows.Registry, hist *historypb.History, workflowID, runID string) error {
	rp := worker.NewWorkflowReplayer()
	reg.RegisterWorkflows(rp)
	quiet := log.NewStructuredLogger(slog.New(slog.DiscardHandler))
	// The workflow id is the run id, part of the run's state (interrupt
	// ids): the replay sees the original.
	exec := workflow.Execution{ID: workflowID, RunID: runID}
	return rp.ReplayWorkflowHistoryWithOptions(quiet, hist, worker.ReplayWorkflowHistoryOptions{OriginalExecution: exec})
}

// ReplayAll replays every history file (*.json) under dir, each in a
// subtest named by its path below dir, and fails the subtest of each one
// that does not replay. It fails t when dir holds no history. It returns
// the tools it found a history of, so that a test can check that every
// tool of reg has one.
func ReplayAll(t *testing.T, reg *workflows.Registry, dir string) map[string]bool {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("list the histories under %s: %v", dir, err)
	}
	if len(files) == 0 {
		t.Fatalf("no histories (*.json) under %s", dir)
	}
	replayed := map[string]bool{}
	for _, file := range files {
		name, _ := filepath.Rel(dir, file)
		t.Run(filepath.ToSlash(name), func(t *testing.T) {
			tool, err := Replay(reg, file)
			if tool != "" {
				replayed[tool] = true
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	return replayed
}
