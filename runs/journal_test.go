package runs_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// TestJournalRecoverAfterCrash: a process starts two runs, hands one to
// its caller (Release) and dies before handing over the other. The next
// process, on the same journal file, cancels the run no caller learned of
// (reason mcp-request-cancelled) and leaves the other alone.
func TestJournalRecoverAfterCrash(t *testing.T) {
	env := testenv.Temporal(t)
	tq := exampleWorker(t, env)
	path := filepath.Join(t.TempDir(), "runs-journal.jsonl")

	j1, err := runs.OpenFileJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	svc1 := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace, Journal: j1})
	startWaiting := func(svc *runs.Service, name string) string {
		snap, err := svc.Start(ctxT(t), runs.NewRun{Tool: signals.ToolSpec{Name: "confirm_delete"},
			Arguments: json.RawMessage(`{"filename":"` + name + `"}`), Caller: alice, Transport: signals.TransportMCP})
		if err != nil {
			t.Fatal(err)
		}
		return snap.RunID
	}
	handed := startWaiting(svc1, "handed.txt")
	svc1.Release(handed)
	orphan := startWaiting(svc1, "orphan.txt")
	if p := j1.Pending(); len(p) != 1 || p[0].RunID != orphan {
		t.Fatalf("pending before the crash: %+v; want only %s", p, orphan)
	}
	_ = j1.Close() // the process dies here

	j2, err := runs.OpenFileJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	svc2 := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace, Journal: j2})
	if err := svc2.Recover(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if p := j2.Pending(); len(p) != 0 {
		t.Fatalf("pending after Recover: %+v", p)
	}
	final, err := svc2.Await(ctxT(t), alice, orphan, func(s signals.Snapshot) bool { return s.Status.Terminal() })
	if err != nil || final.Status != signals.StatusCancelled || final.CancelReason != signals.ReasonMCPRequestCancelled {
		t.Fatalf("run left without an owner: %s (reason %q), %v; want cancelled", final.Status, final.CancelReason, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if snap, err := svc2.Get(ctx, alice, handed); err != nil || snap.Status.Terminal() {
		t.Fatalf("the handed-over run: %s, %v; want it still waiting", snap.Status, err)
	}
	_ = j2.Close()
	j3, err := runs.OpenFileJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j3.Close()
	if p := j3.Pending(); len(p) != 0 {
		t.Fatalf("pending in the file after Recover: %+v", p)
	}
}
