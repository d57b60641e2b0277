package app_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app"
	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
)

// TestUIPortZeroIsAnyFreePort: OPENWOP_UI_PORT=0 serves the embedded Web
// UI on a free port (as docs/configuration.md says), and off serves none.
func TestUIPortZeroIsAnyFreePort(t *testing.T) {
	for _, value := range []string{"0", "off"} {
		t.Run(value, func(t *testing.T) {
			cfg, err := config.LoadConfig(uiEnv{config.EnvUIPort: value})
			if err != nil {
				t.Fatal(err)
			}
			cfg.HTTPAddr, cfg.TemporalPort, cfg.Worker = "127.0.0.1:0", 0, false
			cfg.DataDir, cfg.TemporalLogLevel = filepath.Join(t.TempDir(), "data"), zap.WarnLevel
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			a, err := app.Start(ctx, cfg, testenv.Logger(), app.Parts{})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer func() { _ = a.Shutdown(context.Background()) }()
			if value == "off" {
				if a.UIURL != "" {
					t.Fatalf("UIURL = %q with the UI off", a.UIURL)
				}
				return
			}
			if a.UIURL == "" || strings.HasSuffix(a.UIURL, ":0") || strings.HasSuffix(a.UIURL, ":8233") {
				t.Fatalf("UIURL = %q, want a free port", a.UIURL)
			}
			resp, err := http.Get(a.UIURL)
			if err != nil {
				t.Fatalf("GET %s: %v", a.UIURL, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s = %d", a.UIURL, resp.StatusCode)
			}
		})
	}
}

// uiEnv is an envconfig.EnvLookup over a map.
type uiEnv map[string]string

func (e uiEnv) Environ() []string {
	var out []string
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

func (e uiEnv) LookupEnv(k string) (string, bool) { v, ok := e[k]; return v, ok }
