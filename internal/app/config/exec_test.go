package config

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// buildCommands builds cmd/server and cmd/worker into a temporary
// directory and returns their paths.
func buildCommands(t *testing.T) (server, worker string) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	dir := t.TempDir()
	server, worker = filepath.Join(dir, "server"), filepath.Join(dir, "worker")
	for out, pkg := range map[string]string{server: "github.com/openwop/temporal-mcp/cmd/server", worker: "github.com/openwop/temporal-mcp/cmd/worker"} {
		if b, err := exec.Command(gobin, "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	return server, worker
}

// runCommand runs bin with args in an empty working directory and a clean
// environment (PATH, a fresh HOME, and env), and returns its exit code,
// stdout and stderr. It fails the test if the command runs past timeout.
func runCommand(t *testing.T, bin string, env []string, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = home
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v with %v still ran after %v; stderr:\n%s", filepath.Base(bin), args, env, timeout, stderr.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s: %v", bin, err)
	}
	return code, stdout.String(), stderr.String()
}

// TestCommands runs the built commands (built once for both parts).
func TestCommands(t *testing.T) {
	server, worker := buildCommands(t)
	t.Run("invalid settings", func(t *testing.T) { testInvalidSettings(t, server, worker) })
	t.Run("help", func(t *testing.T) { testHelp(t, server, worker) })
}

// testInvalidSettings runs the commands with one invalid setting each:
// they exit non-zero at once, before any connection, with one line on
// stderr naming the variable.
func testInvalidSettings(t *testing.T, server, worker string) {
	oauth := []string{EnvPublicURL + "=https://wop.example.com", EnvOAuthIssuers + "=https://idp.example.com", EnvOAuthTenantClaim + "=tenant"}
	tests := []struct {
		cmd      string
		variable string
		value    string
		// extra are further settings, valid ones (a later one replaces an
		// earlier one of the same name).
		extra []string
	}{
		{"server", "OPENWOP_API_KEYS", "garbage", nil},
		{"server", "OPENWOP_API_KEYS", "k=acme", nil},
		{"server", "OPENWOP_API_KEYS_FILE", "/nonexistent/keys.json", nil},
		{"server", "OPENWOP_TOOLS_FILE", "/nonexistent/tools.json", nil},
		{"server", "OPENWOP_MRTR_KEY", "too-short", nil},
		{"server", "OPENWOP_AUDIT_LOG", "/nonexistent/dir/audit.jsonl", nil},
		{"server", EnvUIPort, "ui", nil},
		{"server", EnvPublicURL, "wop.example.com", nil},
		{"server", EnvAllowedOrigins, "evil.example", nil},
		{"server", EnvHTTPMaxConns, "0", nil},
		{"server", EnvTenantMaxCalls, "none", nil},
		{"server", EnvHTTPReadTimeout, "forever", nil},
		{"server", EnvTemporalTLS, "maybe", nil},
		{"server", EnvTemporalConfigFile, "/nonexistent/temporal.toml", nil},
		{"worker", EnvTemporalTLS, "maybe", nil},
		{"worker", EnvLogLevel, "loud", nil},
		{"worker", EnvTemporalConfigFile, "/nonexistent/temporal.toml", nil},
		{"worker", "TEMPORAL_TLS_CLIENT_CERT_PATH", "/nonexistent/client.pem", nil},
		{"server", EnvMetricsAddr, "9464", nil},
		{"worker", EnvMetricsAddr, "9464", nil},
		{"server", "OTEL_TRACES_EXPORTER", "zipkin", nil},
		{"worker", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", nil},
		{"server", EnvOAuthIssuers, "idp.example.com", oauth},
		{"server", EnvOAuthIssuers, "http://idp.example.com", oauth},
		{"server", EnvOAuthIssuers, "https://idp.example.com/?tenant=x", oauth},
		{"server", EnvOAuthIssuers, "https://idp.example.com", []string{EnvOAuthTenantClaim + "=tenant"}},
		{"server", EnvPublicURL, "wop.example.com", oauth},
		{"server", EnvOAuthTenantClaim, "", oauth},
		{"server", EnvOAuthTenantClaim, "exp", oauth},
		{"server", EnvOAuthTenantClaim, "org id", oauth},
		{"server", EnvOAuthGroupsClaim, "groups", nil},
		{"server", "OPENWOP_OAUTH_TENANT_CLAIMS", "tenant", oauth},
		{"server", EnvOAuthRequiredScopes, `mcp "all"`, oauth},
	}
	for _, tt := range tests {
		t.Run(tt.cmd+"/"+tt.variable+"="+tt.value, func(t *testing.T) {
			bin := server
			if tt.cmd == "worker" {
				bin = worker
			}
			code, stdout, stderr := runCommand(t, bin, append(slices.Clone(tt.extra), tt.variable+"="+tt.value), 20*time.Second)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code == 0 || stdout != "" || len(lines) != 1 || !strings.Contains(lines[0], tt.variable) ||
				!strings.HasPrefix(lines[0], tt.cmd+": invalid configuration: ") {
				t.Fatalf("exit %d, stdout %q, stderr %q: want a non-zero exit and one line naming %s", code, stdout, stderr, tt.variable)
			}
			t.Logf("%s", lines[0])
		})
	}
	// With -stdio, stdout is the MCP stream: the audit trail may not go there.
	code, stdout, stderr := runCommand(t, server, []string{"OPENWOP_AUDIT_LOG=stdout"}, 20*time.Second, "-stdio")
	if code == 0 || stdout != "" || !strings.Contains(stderr, "OPENWOP_AUDIT_LOG") {
		t.Errorf("-stdio with OPENWOP_AUDIT_LOG=stdout: exit %d, stdout %q, stderr %q; want a refusal naming the variable", code, stdout, stderr)
	}
}

// testHelp: -h on both commands lists the flags and the variables, the
// new ones included, and exits 0 without connecting anywhere.
func testHelp(t *testing.T, server, worker string) {
	shared := []string{EnvTaskQueue, EnvLogLevel, EnvTemporalAddress, EnvTemporalTLS, EnvTemporalProfile, EnvTemporalConfigFile,
		EnvMetricsAddr, "OTEL_EXPORTER_OTLP_ENDPOINT"}
	tests := []struct {
		name string
		bin  string
		want []string
	}{
		{"server", server, append([]string{"-stdio", EnvHTTPAddr, EnvUIPort, EnvPublicURL, EnvAllowedHosts, EnvAllowedOrigins,
			EnvHTTPReadTimeout, EnvHTTPIdleTimeout, EnvHTTPMaxConns, EnvMaxStarts, EnvMaxBlockingCalls, EnvTenantMaxCalls,
			"OPENWOP_API_KEYS", "OPENWOP_MRTR_KEY", "OPENWOP_AUDIT_LOG", EnvOAuthIssuers, EnvOAuthTenantClaim, EnvOAuthGroupsClaim,
			EnvOAuthRequiredScopes}, shared...)},
		{"worker", worker, shared},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCommand(t, tt.bin, nil, 10*time.Second, "-h")
			out := stdout + stderr
			if code != 0 {
				t.Fatalf("-h exited %d: %s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("-h does not list %s:\n%s", w, out)
				}
			}
		})
	}
}
