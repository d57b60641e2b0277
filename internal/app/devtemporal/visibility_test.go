package devtemporal_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/schema/sqlite"

	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
)

// TestVisibilityFile starts a server on a database file as each layout
// finds it, lists runs by tenant, and counts after Stop where their
// visibility records went: a new database keeps them in
// VisibilityFile, one created before in itself, and a restart lists the
// same runs.
func TestVisibilityFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before prepares the directory (the database file is db).
		before func(t *testing.T, db string)
		// inVis is whether the records are in the visibility file.
		inVis bool
	}{
		{name: "new database", before: func(*testing.T, string) {}, inVis: true},
		{name: "database created before", before: func(t *testing.T, db string) {
			// What the embedded server made before visibility had its
			// own file: both schemas in one file.
			cfg := &config.SQL{PluginName: "sqlite", DatabaseName: db, ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal"}}
			if err := sqlite.SetupSchema(cfg); err != nil {
				t.Fatalf("schema: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "temporal.db")
			vis := devtemporal.VisibilityFile(db)
			tc.before(t, db)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			s := start(t, devtemporal.Options{DBFile: db})
			c := dial(t, s)
			assertListByTenant(ctx, t, c, s.Namespace())
			c.Close()
			if err := s.Stop(); err != nil {
				t.Fatalf("Stop: %v", err)
			}

			want := map[string]int{db: 2, vis: 0}
			if tc.inVis {
				want = map[string]int{db: 0, vis: 2}
			}
			for file, n := range want {
				if got := visibilityRows(t, file); got != n {
					t.Errorf("visibility records in %s = %d, want %d", filepath.Base(file), got, n)
				}
			}

			s = start(t, devtemporal.Options{DBFile: db})
			defer func() { _ = s.Stop() }()
			c = dial(t, s)
			defer c.Close()
			assertListed(ctx, t, c, s.Namespace(), "x/run-1")
		})
	}
}

// TestVisibilityFileWithoutDatabase: a visibility file whose database is
// gone is refused with an error naming both, not paired with a new
// database.
func TestVisibilityFileWithoutDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")
	vis := devtemporal.VisibilityFile(db)
	if err := os.WriteFile(vis, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := devtemporal.Start(ctx, devtemporal.Options{DBFile: db})
	if err == nil {
		_ = s.Stop()
		t.Fatal("Start succeeded, want an error")
	}
	for _, name := range []string{vis, db} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("%s was created", db)
	}
}

// TestVisibilityFileName pins the name beside the database.
func TestVisibilityFileName(t *testing.T) {
	for in, want := range map[string]string{
		"data/temporal.db": "data/temporal-visibility.db",
		"/x/y.sqlite":      "/x/y-visibility.sqlite",
		"db":               "db-visibility",
	} {
		if got := devtemporal.VisibilityFile(in); got != want {
			t.Errorf("VisibilityFile(%q) = %q, want %q", in, got, want)
		}
	}
}

// visibilityRows counts the visibility records of the runs
// assertListByTenant starts in a SQLite file, 0 when the file does not
// exist.
func visibilityRows(t *testing.T, file string) int {
	t.Helper()
	if _, err := os.Stat(file); err != nil {
		return 0
	}
	conn, err := sql.Open("sqlite", "file:"+file+"?mode=ro")
	if err != nil {
		t.Fatalf("open %s: %v", file, err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow("SELECT count(*) FROM executions_visibility WHERE workflow_id IN ('x/run-1', 'y/run-2')").Scan(&n); err != nil {
		t.Fatalf("count in %s: %v", file, err)
	}
	return n
}
