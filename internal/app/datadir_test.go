package app_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/datadir"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
)

// TestSharedDataDir: the first process on a data directory runs the
// embedded server on it; a second one with ShareDataDir uses that server
// (never opening the database) and runs workflows there; one without it
// fails naming the holder. When the holder stops, the sharing process runs
// the server itself on the same address, and its client goes on working.
func TestSharedDataDir(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg := config.Config{
		HTTPAddr: "127.0.0.1:0", TaskQueue: testenv.UniqueTaskQueue(t), Worker: true,
		DataDir: filepath.Join(t.TempDir(), "data"), TemporalLogLevel: zap.WarnLevel, ShareDataDir: true,
	}
	holder, err := app.Start(ctx, cfg, testenv.Logger(), app.Parts{Worker: echoWorker})
	if err != nil {
		t.Fatalf("Start (holder): %v", err)
	}
	holderUp := true
	defer func() {
		if holderUp {
			_ = holder.Shutdown(context.Background())
		}
	}()
	if !holder.Embedded || holder.SharedFrom != nil {
		t.Fatalf("holder = %+v, want the embedded server", holder)
	}

	sharer, err := app.Start(ctx, cfg, testenv.Logger(), app.Parts{Worker: echoWorker})
	if err != nil {
		t.Fatalf("Start (sharer): %v", err)
	}
	defer func() {
		if err := sharer.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown (sharer): %v", err)
		}
		// Released: the directory can be locked again.
		l, err := datadir.TryLock(cfg.DataDir)
		if err != nil {
			t.Errorf("after both stopped: %v", err)
		} else {
			_ = l.Release()
		}
	}()
	if sharer.Embedded || sharer.DBFile != "" || sharer.SharedFrom == nil || sharer.SharedFrom.PID != os.Getpid() ||
		sharer.TemporalAddress != holder.TemporalAddress {
		t.Fatalf("sharer = %+v (shared from %+v), want the holder's server %s", sharer, sharer.SharedFrom, holder.TemporalAddress)
	}
	echoOn(ctx, t, sharer.Client, cfg.TaskQueue)

	refused := cfg
	refused.ShareDataDir = false
	_, err = app.Start(ctx, refused, testenv.Logger(), app.Parts{})
	var held *datadir.HeldError
	if !errors.As(err, &held) || !strings.Contains(err.Error(), "in use by process "+strconv.Itoa(os.Getpid())) ||
		!strings.Contains(err.Error(), holder.TemporalAddress) || !strings.Contains(err.Error(), config.EnvDataDir) {
		t.Fatalf("Start without ShareDataDir = %v, want an error naming the holder and %s", err, config.EnvDataDir)
	}

	holderUp = false
	if err := holder.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown (holder): %v", err)
	}
	select {
	case <-sharer.TookOver():
	case err := <-sharer.Failed():
		t.Fatalf("takeover failed: %v", err)
	case <-ctx.Done():
		t.Fatal("the sharer did not take the data directory over")
	}
	echoOn(ctx, t, sharer.Client, cfg.TaskQueue)
	if code, h := getHealth(t, sharer.HTTPAddr); code != http.StatusOK || !h.Temporal.Embedded || h.Temporal.Address != holder.TemporalAddress {
		t.Fatalf("/healthz after the takeover = %d %+v", code, h)
	}
}

// echoOn runs the echo workflow on taskQueue through c.
func echoOn(ctx context.Context, t *testing.T, c client.Client, taskQueue string) {
	t.Helper()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: taskQueue}, echo, "shared")
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	var out string
	if err := run.Get(ctx, &out); err != nil || out != "echo shared" {
		t.Fatalf("result = %q, %v", out, err)
	}
}
