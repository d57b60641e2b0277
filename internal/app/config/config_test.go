package config

import (
	"bytes"
	"flag"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
)

// mapEnv is an envconfig.EnvLookup over a map.
type mapEnv map[string]string

func (e mapEnv) Environ() []string {
	var out []string
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

func (e mapEnv) LookupEnv(k string) (string, bool) { v, ok := e[k]; return v, ok }

func TestConfigLoad(t *testing.T) {
	tests := []struct {
		name    string
		env     mapEnv
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{
			name: "defaults: embedded server, console logs",
			env:  mapEnv{},
			check: func(t *testing.T, c Config) {
				if c.Remote || c.HTTPAddr != "127.0.0.1:8080" || c.TaskQueue != "openwop-tools" || !c.Worker ||
					c.LogFormat != LogConsole || c.LogLevel != zapcore.InfoLevel || c.DataDir != "data" ||
					c.TemporalPort != 7233 || c.UIPort != 8233 || c.TemporalLogLevel != zapcore.WarnLevel ||
					c.Namespace() != "default" || c.DBFile() != "data/temporal.db" {
					t.Errorf("defaults = %+v", c)
				}
			},
		},
		{
			name: "Temporal Cloud with an API key",
			env: mapEnv{
				"TEMPORAL_ADDRESS":   "my-ns.a1b2c.tmprl.cloud:7233",
				"TEMPORAL_NAMESPACE": "my-ns.a1b2c",
				"TEMPORAL_API_KEY":   "secret",
				"OPENWOP_WORKER":     "off",
			},
			check: func(t *testing.T, c Config) {
				if !c.Remote || c.Worker || c.LogFormat != LogJSON {
					t.Errorf("Remote=%v Worker=%v LogFormat=%q, want remote, no worker, json", c.Remote, c.Worker, c.LogFormat)
				}
				if c.Client.HostPort != "my-ns.a1b2c.tmprl.cloud:7233" || c.Namespace() != "my-ns.a1b2c" {
					t.Errorf("HostPort=%q Namespace=%q", c.Client.HostPort, c.Namespace())
				}
				if c.Client.Credentials == nil || c.Client.ConnectionOptions.TLS == nil {
					t.Errorf("API key credentials/TLS not set: %+v", c.Client)
				}
			},
		},
		{
			name: "a profile alone selects a remote server",
			env:  mapEnv{"TEMPORAL_CONFIG_FILE": "/dev/null"},
			check: func(t *testing.T, c Config) {
				if !c.Remote {
					t.Error("Remote = false")
				}
			},
		},
		{
			name: "overrides",
			env: mapEnv{
				"OPENWOP_HTTP_ADDR": "0.0.0.0:9000", "OPENWOP_TASK_QUEUE": "q", "OPENWOP_DATA_DIR": "/var/lib/openwop",
				"OPENWOP_TEMPORAL_PORT": "0", "OPENWOP_UI_PORT": "off", "OPENWOP_LOG_FORMAT": "JSON",
				"OPENWOP_LOG_LEVEL": "debug", "OPENWOP_TEMPORAL_LOG_LEVEL": "error", "TEMPORAL_NAMESPACE": "dev",
				"OPENWOP_FIXTURES": "on", "OPENWOP_TEMPORAL_GZIP": "on",
			},
			check: func(t *testing.T, c Config) {
				if c.Remote || c.HTTPAddr != "0.0.0.0:9000" || c.TaskQueue != "q" || c.DBFile() != "/var/lib/openwop/temporal.db" ||
					c.TemporalPort != 0 || c.UIPort != 0 || c.LogFormat != LogJSON || c.LogLevel != zapcore.DebugLevel ||
					c.TemporalLogLevel != zapcore.ErrorLevel || c.Namespace() != "dev" || !c.Fixtures || !c.TemporalGzip {
					t.Errorf("config = %+v", c)
				}
			},
		},
		{
			name: "a versioned worker",
			env:  mapEnv{"TEMPORAL_DEPLOYMENT_NAME": "tools", "TEMPORAL_WORKER_BUILD_ID": "2026-12-05.1"},
			check: func(t *testing.T, c Config) {
				if c.DeploymentName != "tools" || c.BuildID != "2026-12-05.1" {
					t.Errorf("deployment %q build id %q", c.DeploymentName, c.BuildID)
				}
			},
		},
		{name: "deployment without build id", env: mapEnv{"TEMPORAL_DEPLOYMENT_NAME": "tools"}, wantErr: "TEMPORAL_WORKER_BUILD_ID: set both"},
		{name: "build id without deployment", env: mapEnv{"TEMPORAL_WORKER_BUILD_ID": "v1"}, wantErr: "TEMPORAL_DEPLOYMENT_NAME and"},
		{name: "dot in the deployment name", env: mapEnv{"TEMPORAL_DEPLOYMENT_NAME": "my.tools", "TEMPORAL_WORKER_BUILD_ID": "v1"}, wantErr: "has no"},
		{name: "bad worker switch", env: mapEnv{"OPENWOP_WORKER": "maybe"}, wantErr: "OPENWOP_WORKER"},
		{name: "bad fixtures switch", env: mapEnv{"OPENWOP_FIXTURES": "2"}, wantErr: "OPENWOP_FIXTURES"},
		{name: "bad gzip switch", env: mapEnv{"OPENWOP_TEMPORAL_GZIP": "gz"}, wantErr: "OPENWOP_TEMPORAL_GZIP"},
		{name: "bad HTTP address", env: mapEnv{"OPENWOP_HTTP_ADDR": "8080"}, wantErr: "OPENWOP_HTTP_ADDR"},
		{name: "bad port", env: mapEnv{"OPENWOP_TEMPORAL_PORT": "70000"}, wantErr: "OPENWOP_TEMPORAL_PORT"},
		{name: "bad UI port", env: mapEnv{"OPENWOP_UI_PORT": "ui"}, wantErr: "OPENWOP_UI_PORT"},
		{name: "bad log format", env: mapEnv{"OPENWOP_LOG_FORMAT": "xml"}, wantErr: "OPENWOP_LOG_FORMAT"},
		{name: "bad log level", env: mapEnv{"OPENWOP_LOG_LEVEL": "loud"}, wantErr: "OPENWOP_LOG_LEVEL"},
		{
			name:    "missing mTLS certificate",
			env:     mapEnv{"TEMPORAL_ADDRESS": "x:7233", "TEMPORAL_TLS_CLIENT_CERT_PATH": "/nonexistent.pem", "TEMPORAL_TLS_CLIENT_KEY_PATH": "/nonexistent.key"},
			wantErr: "temporal client configuration",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestConfigNewLogger(t *testing.T) {
	for _, f := range []string{LogJSON, LogConsole} {
		if _, err := NewLogger(f, zapcore.InfoLevel); err != nil {
			t.Errorf("NewLogger(%s): %v", f, err)
		}
	}
	if _, err := NewLogger("xml", zapcore.InfoLevel); err == nil {
		t.Error("NewLogger(xml) succeeded")
	}
}

// TestDepsWorkerHasNoTemporalServer: the worker binary (and this package)
// must not link the Temporal server; only cmd/server embeds one.
func TestDepsWorkerHasNoTemporalServer(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	for _, pkg := range []string{"github.com/openwop/temporal-mcp/cmd/worker", "github.com/openwop/temporal-mcp/internal/app/config"} {
		out, err := exec.Command(gobin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		var server []string
		for _, dep := range strings.Fields(string(out)) {
			if dep == "go.temporal.io/server" || strings.HasPrefix(dep, "go.temporal.io/server/") {
				server = append(server, dep)
			}
		}
		if len(server) > 0 {
			t.Errorf("%s depends on %d go.temporal.io/server packages (e.g. %s); keep the embedded server out of it (only cmd/server may use internal/app/devtemporal)",
				pkg, len(server), server[0])
		}
	}
}

func TestConfigUsage(t *testing.T) {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.Bool("x", false, "a flag")
	var b bytes.Buffer
	Usage(&b, "Command worker runs tools.", fs, WorkerVars())
	for _, want := range []string{"Command worker runs tools.", "-x", EnvTaskQueue, EnvTemporalAddress, "openwop-tools"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, b.String())
		}
	}
}
