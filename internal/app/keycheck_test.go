package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/keycheck"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
)

// TestMRTRKeyMismatchIsLogged: replicas on one Temporal namespace compare
// their MRTR keys at start. A replica whose key differs from the one the
// replica before it published logs an error naming both fingerprints and
// OPENWOP_MRTR_KEY; one with the same key as the replica before it logs
// nothing; neither log holds a key.
func TestMRTRKeyMismatchIsLogged(t *testing.T) {
	env := testenv.Temporal(t)
	keyA := []byte(strings.Repeat("a", 32) + testenv.UniqueID(""))
	keyB := []byte(strings.Repeat("b", 32) + testenv.UniqueID(""))
	start := func(key []byte) *observer.ObservedLogs {
		t.Helper()
		core, logs := observer.New(zapcore.WarnLevel)
		srv, err := app.NewServer(app.ServerOptions{MRTRKey: key})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cfg := remoteConfig(t, env)
		cfg.Worker = false
		a, err := app.Start(ctx, cfg, zap.New(core), srv.Parts())
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
		return logs
	}
	mismatches := func(logs *observer.ObservedLogs) []observer.LoggedEntry {
		return logs.FilterMessageSnippet("is not the key of replica").AllUntimed()
	}

	start(keyA) // the replica before: whatever it found, it publishes keyA's
	logsB := start(keyB)
	got := mismatches(logsB)
	if len(got) != 1 || got[0].Level != zapcore.ErrorLevel {
		t.Fatalf("a replica with another key logged %v, want one error", logsB.AllUntimed())
	}
	msg := got[0].Message
	for _, want := range []string{keycheck.Fingerprint(keyA), keycheck.Fingerprint(keyB), "OPENWOP_MRTR_KEY"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error %q does not name %q", msg, want)
		}
	}
	if fields := got[0].ContextMap(); fields["key_fingerprint"] != keycheck.Fingerprint(keyB) || fields["other_key_fingerprint"] != keycheck.Fingerprint(keyA) {
		t.Errorf("the error's fields %v, want both fingerprints", fields)
	}
	if strings.Contains(msg, string(keyA)) || strings.Contains(msg, string(keyB)) {
		t.Errorf("the error %q holds a key", msg)
	}

	// What replicas meet on holds the fingerprint, never the key.
	desc, err := env.Client.DescribeWorkflowExecution(context.Background(), keycheck.WorkflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	memo := desc.GetWorkflowExecutionInfo().GetMemo().String()
	if !strings.Contains(memo, keycheck.Fingerprint(keyB)) || strings.Contains(memo, string(keyB)) {
		t.Errorf("the published memo %s: want keyB's fingerprint and not the key", memo)
	}

	logsC := start(keyB) // as the replica before it
	if got := mismatches(logsC); len(got) != 0 {
		t.Fatalf("a replica with the same key as the one before it logged %v", got)
	}
}
