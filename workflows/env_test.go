package workflows_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/openwop/temporal-mcp/internal/devtemporal"
)

// Temporary stand-in for internal/testenv while it is being written.
type tenv struct {
	Client client.Client
}

var (
	envOnce sync.Once
	envSrv  *devtemporal.Server
	envErr  error
)

func temporalEnv(t *testing.T) *tenv {
	t.Helper()
	envOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		envSrv, envErr = devtemporal.Start(ctx, devtemporal.Options{})
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
	c, err := client.Dial(client.Options{HostPort: envSrv.Address(), Namespace: envSrv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &tenv{Client: c}
}

func (e *tenv) NewWorker(t *testing.T, tq string, register func(worker.Registry)) {
	w := worker.New(e.Client, tq, worker.Options{})
	register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}
