package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
)

// TestLoadServer: the settings of cmd/server alone, and the refusals that
// name their variable.
func TestLoadServer(t *testing.T) {
	dir := t.TempDir()
	keysFile := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keysFile, []byte(`[{"key":"fk","tenant":"tenantB","subject":"bob"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	oauth := mapEnv{EnvPublicURL: "https://wop.example.com", EnvOAuthIssuers: "https://idp.example.com", EnvOAuthTenantClaim: "tenant"}
	with := func(base mapEnv, k, v string) mapEnv {
		e := mapEnv{k: v}
		for bk, bv := range base {
			e[bk] = bv
		}
		return e
	}
	tests := []struct {
		name    string
		env     mapEnv
		stdio   bool
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{name: "defaults", env: mapEnv{}, check: func(t *testing.T, c Config) {
			s := c.Server
			if !s.Keys.Dev() || s.OAuth != nil || s.AuditLog != DefaultAuditLog || s.ToolsFile != "" || s.MRTRKey != nil ||
				!reflect.DeepEqual(s.StdioCaller, auth.Anonymous()) || s.NexusTenants != nil || c.ShareDataDir || c.HTTPAddr != DefaultHTTPAddr || c.UIPort != DefaultUIPort {
				t.Fatalf("server settings %+v of config %+v: want the defaults", s, c)
			}
		}},
		{name: "keys and key file merged", env: mapEnv{EnvAPIKeys: "ek=tenantA:alice", EnvAPIKeysFile: keysFile}, check: func(t *testing.T, c Config) {
			if c.Server.Keys.Dev() || c.Server.Keys.Len() != 2 {
				t.Fatalf("keys: Len %d, Dev %v; want 2 keys", c.Server.Keys.Len(), c.Server.Keys.Dev())
			}
		}},
		{name: "missing key file", env: mapEnv{EnvAPIKeysFile: filepath.Join(dir, "missing.json")}, wantErr: EnvAPIKeysFile},
		{name: "bad keys", env: mapEnv{EnvAPIKeys: "k=acme"}, wantErr: EnvAPIKeys},
		{name: "audit file", env: mapEnv{EnvAuditLog: " " + filepath.Join(dir, "audit.jsonl") + " "}, check: func(t *testing.T, c Config) {
			if c.Server.AuditLog != filepath.Join(dir, "audit.jsonl") {
				t.Fatalf("audit log %q", c.Server.AuditLog)
			}
		}},
		{name: "audit stdout", env: mapEnv{EnvAuditLog: "stdout"}, check: func(t *testing.T, c Config) {
			if c.Server.AuditLog != "stdout" {
				t.Fatalf("audit log %q", c.Server.AuditLog)
			}
		}},
		{name: "audit stdout with stdio", env: mapEnv{EnvAuditLog: "stdout"}, stdio: true, wantErr: EnvAuditLog},
		{name: "stdio free ports", env: mapEnv{}, stdio: true, check: func(t *testing.T, c Config) {
			if c.HTTPAddr != "127.0.0.1:0" || c.TemporalPort != 0 || c.UIPort != 0 || !c.UI || !c.ShareDataDir {
				t.Fatalf("stdio config %+v: want free ports and a shared data dir", c)
			}
		}},
		{name: "stdio set ports", env: mapEnv{EnvHTTPAddr: "127.0.0.1:9000", EnvTemporalPort: "7300", EnvUIPort: "off"}, stdio: true,
			check: func(t *testing.T, c Config) {
				if c.HTTPAddr != "127.0.0.1:9000" || c.TemporalPort != 7300 || c.UI || c.UIPort != 0 {
					t.Fatalf("stdio config %+v: want the ports set", c)
				}
			}},
		{name: "stdio caller", env: mapEnv{EnvStdioTenant: "acme"}, check: func(t *testing.T, c Config) {
			if got := c.Server.StdioCaller; got.Tenant != "acme" || got.SubjectID != "urn:openwop:stdio" || got.Kind != "user" {
				t.Fatalf("stdio caller %+v", got)
			}
		}},
		{name: "nexus tenants", env: mapEnv{EnvNexusTenants: " team-b = acme , team-c=globex"}, check: func(t *testing.T, c Config) {
			want := map[string]string{"team-b": "acme", "team-c": "globex"}
			if !reflect.DeepEqual(c.Server.NexusTenants, want) || c.Server.NexusTaskQueue != DefaultNexusTaskQueue {
				t.Fatalf("nexus tenants %v on %q, want %v on %s", c.Server.NexusTenants, c.Server.NexusTaskQueue, want, DefaultNexusTaskQueue)
			}
		}},
		{name: "nexus task queue", env: mapEnv{EnvNexusTenants: "b=acme", EnvNexusTaskQueue: "tools-nexus"}, check: func(t *testing.T, c Config) {
			if c.Server.NexusTaskQueue != "tools-nexus" {
				t.Fatalf("nexus task queue %q", c.Server.NexusTaskQueue)
			}
		}},
		{name: "nexus tenant without namespace", env: mapEnv{EnvNexusTenants: "=acme"}, wantErr: EnvNexusTenants},
		{name: "nexus tenant without tenant", env: mapEnv{EnvNexusTenants: "team-b"}, wantErr: EnvNexusTenants},
		{name: "nexus namespace mapped twice", env: mapEnv{EnvNexusTenants: "team-b=acme,team-b=globex"}, wantErr: "mapped twice"},
		{name: "short MRTR key", env: mapEnv{EnvMRTRKey: "too-short"}, wantErr: EnvMRTRKey},
		{name: "MRTR key", env: mapEnv{EnvMRTRKey: strings.Repeat("k", MinMRTRKey)}, check: func(t *testing.T, c Config) {
			if len(c.Server.MRTRKey) != MinMRTRKey {
				t.Fatalf("MRTR key of %d bytes", len(c.Server.MRTRKey))
			}
		}},
		{name: "handoff bound and list tool by default", env: mapEnv{}, check: func(t *testing.T, c Config) {
			if c.Server.MaxBlockingWait != DefaultMaxBlockingWait || !c.Server.RunListTool || !c.Server.CompanionTools {
				t.Fatalf("server settings %+v: want the 45 s bound and the list and companion tools on", c.Server)
			}
		}},
		{name: "handoff bound and list tool set", env: mapEnv{EnvMaxBlockingWait: "20s", EnvRunListTool: "off"}, check: func(t *testing.T, c Config) {
			if c.Server.MaxBlockingWait != 20*time.Second || c.Server.RunListTool {
				t.Fatalf("server settings %+v: want a 20 s bound and no list tool", c.Server)
			}
		}},
		{name: "zero handoff bound", env: mapEnv{EnvMaxBlockingWait: "0s"}, wantErr: EnvMaxBlockingWait},
		{name: "bad list tool switch", env: mapEnv{EnvRunListTool: "maybe"}, wantErr: EnvRunListTool},
		{name: "missing tools file", env: mapEnv{EnvToolsFile: filepath.Join(dir, "tools.json")}, wantErr: EnvToolsFile},
		{name: "oauth", env: oauth, check: func(t *testing.T, c Config) {
			if o := c.Server.OAuth; o == nil || o.TenantClaim != "tenant" || o.Resource != "https://wop.example.com"+auth.ResourcePath {
				t.Fatalf("OAuth options %+v", o)
			}
		}},
		{name: "oauth without issuers", env: mapEnv{EnvOAuthGroupsClaim: "groups"}, wantErr: EnvOAuthGroupsClaim},
		{name: "misspelt OAuth setting", env: with(oauth, "OPENWOP_OAUTH_TENANT_CLAIMS", "tenant"), wantErr: "OPENWOP_OAUTH_TENANT_CLAIMS: no such setting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadServer(tt.env, tt.stdio)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

// TestWorkerIgnoresServerOnly: cmd/worker does not read the variables of
// cmd/server alone, so an invalid one does not stop it.
func TestWorkerIgnoresServerOnly(t *testing.T) {
	if _, err := LoadConfig(mapEnv{EnvAPIKeys: "k=acme", EnvMRTRKey: "short", "OPENWOP_OAUTH_TENANT_CLAIMS": "x"}); err != nil {
		t.Fatalf("LoadConfig read a setting of cmd/server alone: %v", err)
	}
}
