package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/operator"
	"github.com/openwop/temporal-mcp/internal/nexusfront"
	"github.com/openwop/temporal-mcp/internal/testing/nexustest"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

type greetIn struct {
	Name string `json:"name"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

func greet(_ workflow.Context, in greetIn) (greetOut, error) {
	return greetOut{Greeting: "hello " + in.Name}, nil
}

// TestServerServesNexus: a server assembled as cmd/server assembles it,
// configured with OPENWOP_NEXUS_TENANTS and OPENWOP_NEXUS_TASK_QUEUE, serves its tools'
// Nexus service from the in-process worker: a workflow of another
// namespace calls a tool through an endpoint targeting the service's task
// queue and gets the run's result, and the audit trail records the start
// by the namespace's subject over transport nexus.
func TestServerServesNexus(t *testing.T) {
	env := testenv.Temporal(t)
	callers := nexustest.NewCallers(t, env)
	tenant := testenv.UniqueID("nexus-tenant-")
	reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("greet", "Greet someone.", greet)})
	if err != nil {
		t.Fatal(err)
	}
	trail := &lockedBuffer{}
	nexusTQ := testenv.UniqueTaskQueue(t)
	cfg, err := config.LoadServer(uiEnv{
		config.EnvTemporalAddress: env.Address, config.EnvTemporalNamespace: env.Namespace,
		config.EnvTaskQueue: testenv.UniqueTaskQueue(t), config.EnvHTTPAddr: "127.0.0.1:0", config.EnvDataDir: t.TempDir(),
		config.EnvNexusTenants: callers.Namespace + "=" + tenant, config.EnvNexusTaskQueue: nexusTQ,
	}, false)
	if err != nil {
		t.Fatalf("LoadServer: %v", err)
	}
	srv, err := app.NewServer(app.ServerOptions{Registry: reg, Audit: audit.New(zapcore.AddSync(trail)), Worker: cfg.Worker,
		Nexus: app.NexusOptionsOf(cfg.Server)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.Start(ctx, cfg, testenv.Logger(), srv.Parts())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	// The endpoint, created by the operator command.
	endpoint := testenv.UniqueID("tools-")
	var out, errOut bytes.Buffer
	if code := operator.Main(ctx, []string{"nexus", "create-endpoint", "-name", endpoint, "-target-namespace", env.Namespace, "-target-task-queue", nexusTQ},
		uiEnv{config.EnvTemporalAddress: env.Address, config.EnvTemporalNamespace: env.Namespace}, &out, &errOut); code != operator.ExitOK {
		t.Fatalf("nexus create-endpoint = %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "Nexus endpoint "+endpoint) {
		t.Fatalf("nexus create-endpoint said %q, want the endpoint named", out.String())
	}

	var rec signals.RunRecord
	if err := callers.Call(t, ctx, endpoint, nexusfront.DefaultService, "greet", map[string]any{"name": "ada"}).Get(ctx, &rec); err != nil {
		t.Fatalf("caller: %v", err)
	}
	if s := rec.Snapshot; s.Status != signals.StatusCompleted || s.Result == nil || string(s.Result.StructuredContent) != `{"greeting":"hello ada"}` ||
		s.Owner.Tenant != tenant {
		t.Fatalf("run = %+v, want completed with the greeting, of tenant %s", s, tenant)
	}
	st := &auditStack{t: t, trail: trail}
	var starts []map[string]string
	for _, r := range st.records() {
		if r["action"] == "start" {
			starts = append(starts, r)
		}
	}
	if len(starts) != 1 || starts[0]["transport"] != signals.TransportNexus || starts[0]["tenant"] != tenant ||
		starts[0]["subject"] != nexusfront.Subject(callers.Namespace) || starts[0]["runId"] != rec.Snapshot.RunID {
		t.Fatalf("audit starts = %v, want one start of run %s by %s over nexus", starts, rec.Snapshot.RunID, nexusfront.Subject(callers.Namespace))
	}
}
