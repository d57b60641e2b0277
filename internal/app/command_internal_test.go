package app

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/datadir"
)

// keyEnv is an envconfig.EnvLookup over a map.
type keyEnv map[string]string

func (e keyEnv) Environ() []string {
	var out []string
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

func (e keyEnv) LookupEnv(k string) (string, bool) { v, ok := e[k]; return v, ok }

// TestLoadSettingsMRTRKey: without OPENWOP_MRTR_KEY the server's key is
// the data directory's key file, with and without -stdio; the variable
// wins when set; a -stdio process on a remote Temporal, which uses no data
// directory, keeps a random key and writes nothing; a key file others may
// read stops the start with an error naming the variable and the file.
func TestLoadSettingsMRTRKey(t *testing.T) {
	set := strings.Repeat("k", config.MinMRTRKey)
	cases := []struct {
		name     string
		env      keyEnv
		stdio    bool
		preset   os.FileMode // mode of a key file written first; 0: none
		wantFile bool        // the key is the data directory's file
		wantKey  string      // the key wanted otherwise ("": random)
		err      string
	}{
		{name: "default", env: keyEnv{}, wantFile: true},
		{name: "stdio", env: keyEnv{}, stdio: true, wantFile: true},
		{name: "remote", env: keyEnv{config.EnvTemporalAddress: "127.0.0.1:1"}, wantFile: true},
		{name: "stdio on a remote Temporal", env: keyEnv{config.EnvTemporalAddress: "127.0.0.1:1"}, stdio: true},
		{name: "variable set", env: keyEnv{config.EnvMRTRKey: set}, wantKey: set},
		{name: "file others may read", env: keyEnv{}, preset: 0o644, err: config.EnvMRTRKey + " unset: key file "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			c.env[config.EnvDataDir] = dir
			path := filepath.Join(dir, datadir.KeyFile)
			if c.preset != 0 {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(strings.Repeat("a", datadir.KeyLen)+"\n"), c.preset); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, c.preset); err != nil {
					t.Fatal(err)
				}
			}
			st, err := loadSettings(c.env, c.stdio)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err+path) {
					t.Fatalf("loadSettings = %v, want %q", err, c.err+path)
				}
				return
			}
			if err != nil {
				t.Fatalf("loadSettings: %v", err)
			}
			defer func() { _ = st.audit.Close() }()
			b, ferr := os.ReadFile(path)
			key := string(st.cfg.Server.MRTRKey)
			switch {
			case c.wantFile:
				if ferr != nil || key != strings.TrimSpace(string(b)) {
					t.Fatalf("key %q, key file %q (%v); want the file's key", key, b, ferr)
				}
			case !errors.Is(ferr, fs.ErrNotExist):
				t.Fatalf("key file written: %q, %v", b, ferr)
			case key != c.wantKey:
				t.Fatalf("key %q, want %q", key, c.wantKey)
			}
		})
	}
}
