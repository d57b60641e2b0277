package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/toolworker"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
)

// envMap is an envconfig.EnvLookup over a map: the process environment
// of a server under test.
type envMap map[string]string

func (e envMap) Environ() []string {
	var out []string
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

func (e envMap) LookupEnv(k string) (string, bool) { v, ok := e[k]; return v, ok }

// TestServerVersionedWorker starts the server as cmd/server does, from
// its environment, with TEMPORAL_DEPLOYMENT_NAME and
// TEMPORAL_WORKER_BUILD_ID: its in-process worker is that version of the
// Worker Deployment (Temporal lists it; its metadata names the tools),
// the start does not wait for its tools while the version is not current,
// a call is refused until it is, and a run started through the server
// then records the version, pinned.
func TestServerVersionedWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	deployment := testenv.UniqueID("server-")
	const build = "2026-12-05.1"
	cfg, err := config.LoadServer(envMap{
		config.EnvTemporalAddress: env.Address, config.EnvTemporalNamespace: env.Namespace,
		config.EnvTaskQueue: tq, config.EnvHTTPAddr: "127.0.0.1:0", config.EnvDataDir: t.TempDir(),
		config.EnvDeploymentName: deployment, config.EnvBuildID: build,
	}, false)
	if err != nil {
		t.Fatalf("LoadServer: %v", err)
	}
	logger := testenv.Logger()
	reg, _, err := toolworker.Registry(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := app.NewServer(app.ServerOptions{Registry: reg, Authenticate: auth.AnonymousAuthenticator, Worker: cfg.Worker})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	a, err := app.Start(ctx, cfg, logger, srv.Parts())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = a.Shutdown(context.Background()) }()
	// A version not current yet is served as it is: the start does not
	// wait out ReadyTimeout for tools only an operator can list.
	if took := time.Since(began); took >= app.ReadyTimeout {
		t.Errorf("Start took %s with a version not current, want less than app.ReadyTimeout", took)
	} else {
		t.Logf("Start took %s", took.Round(time.Millisecond))
	}

	h := env.Client.WorkerDeploymentClient().GetHandle(deployment)
	visibility.Require(t, "the server's version in its deployment, naming its tools", func(ctx context.Context) error {
		return versionNamesTools(ctx, h, build, tq)
	})

	// Not current yet: a call is refused, saying so.
	r := mcpCall(t, a.HTTPAddr, "tools/call", "delay", map[string]any{"name": "delay", "arguments": map[string]any{"delayMs": 1}})
	if got := fmt.Sprint(r.Error) + string(r.Result); !strings.Contains(got, "has no current version") {
		t.Fatalf("tools/call before the version is current = %s, want it refused as having no current version", got)
	}

	if _, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: build}); err != nil {
		t.Fatalf("SetCurrentVersion: %v", err)
	}
	visibility.Require(t, "delay listed", func(context.Context) error {
		var list struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		r := mcpCall(t, a.HTTPAddr, "tools/list", "", map[string]any{})
		if r.Error != nil || json.Unmarshal(r.Result, &list) != nil ||
			!slices.ContainsFunc(list.Tools, func(tl struct{ Name string }) bool { return tl.Name == "delay" }) {
			return fmt.Errorf("tools/list = %+v %s", r.Error, r.Result)
		}
		return nil
	})
	// A run that waits for approval, so that the call answers a task.
	r = mcpCall(t, a.HTTPAddr, "tools/call", "publish_report", map[string]any{
		"name": "publish_report", "arguments": map[string]any{"title": "Q3", "topic": "sales", "sections": 2},
	})
	var created outageTask
	if r.Error != nil || json.Unmarshal(r.Result, &created) != nil || created.TaskID == "" {
		t.Fatalf("tools/call: %+v %s", r.Error, r.Result)
	}
	runID := testsupport.RunOf(t, created.TaskID)
	visibility.Require(t, "the run's version", func(ctx context.Context) error {
		desc, err := env.Client.DescribeWorkflowExecution(ctx, runID, "")
		if err != nil {
			return err
		}
		vi := desc.GetWorkflowExecutionInfo().GetVersioningInfo()
		if v := vi.GetDeploymentVersion(); v.GetDeploymentName() != deployment || v.GetBuildId() != build || vi.GetBehavior() != enumspb.VERSIONING_BEHAVIOR_PINNED {
			return fmt.Errorf("run %s: version %v, behavior %s", runID, v, vi.GetBehavior())
		}
		return nil
	})
}

// versionNamesTools checks that Temporal lists build among the versions
// of h's deployment, and that the version's metadata names the server's
// tools on tq.
func versionNamesTools(ctx context.Context, h client.WorkerDeploymentHandle, build, tq string) error {
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(d.Info.VersionSummaries, func(s client.WorkerDeploymentVersionSummary) bool { return s.Version.BuildID == build }) {
		return fmt.Errorf("versions %+v", d.Info.VersionSummaries)
	}
	v, err := h.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: build})
	if err != nil {
		return err
	}
	var names []string
	p, ok := v.Info.Metadata[catalog.VersionMetadataKey(tq)]
	if !ok || converter.GetDefaultDataConverter().FromPayload(p, &names) != nil {
		return fmt.Errorf("metadata %v", v.Info.Metadata)
	}
	if got := strings.Join(names, ","); got != "approve_expense,delay,publish_report" {
		return fmt.Errorf("the version's metadata names %s", got)
	}
	return nil
}

// TestServerDeploymentRefused: a deployment name or build id Temporal
// would refuse stops the server before it starts, naming the variable.
func TestServerDeploymentRefused(t *testing.T) {
	tests := []struct {
		name, deployment, build, want string
	}{
		{name: "build id alone", build: "v1", want: config.EnvDeploymentName},
		{name: "deployment alone", deployment: "tools", want: config.EnvBuildID},
		{name: "dot in the name", deployment: "my.tools", build: "v1", want: config.EnvDeploymentName},
		{name: "colon in the name", deployment: "my:tools", build: "v1", want: config.EnvDeploymentName},
		{name: "reserved name", deployment: "__tools", build: "v1", want: config.EnvDeploymentName},
		{name: "reserved build id", deployment: "tools", build: "__v1", want: config.EnvBuildID},
		{name: "build id too long", deployment: "tools", build: strings.Repeat("b", 481), want: config.EnvBuildID},
		{name: "name too long", deployment: strings.Repeat("d", 481), build: "v1", want: config.EnvDeploymentName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.LoadServer(envMap{
				config.EnvTemporalAddress: "127.0.0.1:7233", config.EnvDataDir: t.TempDir(),
				config.EnvDeploymentName: tt.deployment, config.EnvBuildID: tt.build,
			}, false)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadServer = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}
