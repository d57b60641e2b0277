package app_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/app"
)

// TestMountOnlyBuild pins the lean mount-only build of cmd/server: with
// the mountonly tag it links no go.temporal.io/server package (the stock
// build does), and without TEMPORAL_ADDRESS it refuses to start, naming
// the setting, instead of embedding a server.
func TestMountOnlyBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const cmd = "github.com/openwop/temporal-mcp/cmd/server"
	servers := func(tags ...string) int {
		t.Helper()
		args := append([]string{"list", "-deps"}, tags...)
		out, err := exec.CommandContext(ctx, "go", append(args, cmd)...).Output()
		if err != nil {
			t.Fatalf("go list %v: %v", tags, err)
		}
		n := 0
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, "go.temporal.io/server/") {
				n++
			}
		}
		return n
	}
	if n := servers(); n == 0 {
		t.Fatal("the stock build links no go.temporal.io/server package: this check checks nothing")
	}
	if n := servers("-tags", app.MountOnlyTag); n != 0 {
		t.Fatalf("the %s build links %d go.temporal.io/server packages, want none", app.MountOnlyTag, n)
	}

	bin := filepath.Join(t.TempDir(), "server")
	if out, err := exec.CommandContext(ctx, "go", "build", "-tags", app.MountOnlyTag, "-o", bin, cmd).CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %s: %v\n%s", app.MountOnlyTag, err, out)
	}
	run := exec.CommandContext(ctx, bin)
	run.Env = append(os.Environ(), "TEMPORAL_ADDRESS=", "TEMPORAL_PROFILE=", "TEMPORAL_CONFIG_FILE=",
		"OPENWOP_DATA_DIR="+t.TempDir(), "OPENWOP_HTTP_ADDR=127.0.0.1:0")
	out, err := run.CombinedOutput()
	if err == nil {
		t.Fatalf("the %s build started without TEMPORAL_ADDRESS:\n%s", app.MountOnlyTag, out)
	}
	for _, want := range []string{"embeds no Temporal server", "TEMPORAL_ADDRESS"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the %s build without TEMPORAL_ADDRESS: %v, output lacks %q:\n%s", app.MountOnlyTag, err, want, out)
		}
	}
}
