package devtemporal

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/common/resolver"
	"go.temporal.io/server/schema"
	postgresqlschema "go.temporal.io/server/schema/postgresql/v12"
	"go.temporal.io/server/schema/sqlite"
)

// Defaults of Postgres fields.
const (
	// DefaultPostgresDatabase is the database of workflow state.
	DefaultPostgresDatabase = "temporal"
	// DefaultPostgresVisibilityDatabase is the database of SQL visibility.
	DefaultPostgresVisibilityDatabase = "temporal_visibility"
)

// Names of the two data stores of a PostgreSQL-backed server.
const (
	storeDefault    = "default"
	storeVisibility = "visibility"
)

// Postgres is a PostgreSQL server to persist in: workflow state in one
// database, SQL visibility (the run listings and search attributes) in
// another. Start creates either database with its schema when missing.
type Postgres struct {
	// Address is the server's host:port.
	Address string
	// User and Password authenticate; the user must be allowed to create
	// databases when they do not exist yet.
	User, Password string
	// Database holds workflow state. Default DefaultPostgresDatabase.
	Database string
	// VisibilityDatabase holds visibility. Default
	// DefaultPostgresVisibilityDatabase.
	VisibilityDatabase string
}

// sqlConfigs are the SQL configs of the two databases.
func (p Postgres) sqlConfigs() (main, visibility *config.SQL) {
	p.Database = cmp.Or(p.Database, DefaultPostgresDatabase)
	p.VisibilityDatabase = cmp.Or(p.VisibilityDatabase, DefaultPostgresVisibilityDatabase)
	cfg := func(db string) *config.SQL {
		return &config.SQL{
			PluginName:      postgresql.PluginNamePGX,
			DatabaseName:    db,
			ConnectAddr:     p.Address,
			ConnectProtocol: "tcp",
			User:            p.User,
			Password:        p.Password,
			MaxConns:        20,
			MaxIdleConns:    20,
			MaxConnLifetime: time.Hour,
		}
	}
	return cfg(p.Database), cfg(p.VisibilityDatabase)
}

// persistence is the persistence config of a PostgreSQL-backed server.
func (p Postgres) persistence(shards int32) config.Persistence {
	main, vis := p.sqlConfigs()
	return config.Persistence{
		DefaultStore:     storeDefault,
		VisibilityStore:  storeVisibility,
		NumHistoryShards: shards,
		DataStores: map[string]config.DataStore{
			storeDefault:    {SQL: main},
			storeVisibility: {SQL: vis},
		},
	}
}

// preparePostgres creates the two databases and their schemas where
// missing and registers the namespace unless it exists.
func preparePostgres(p Postgres, opts Options) error {
	main, vis := p.sqlConfigs()
	logger := log.NewNoopLogger()
	for _, db := range []struct {
		cfg             *config.SQL
		schema, version string
	}{
		{main, "postgresql/v12/temporal", postgresqlschema.Version},
		{vis, "postgresql/v12/visibility", postgresqlschema.VisibilityVersion},
	} {
		if err := setupDatabase(db.cfg, db.schema, db.version, logger); err != nil {
			return fmt.Errorf("devtemporal: PostgreSQL database %s at %s: %w", db.cfg.DatabaseName, p.Address, err)
		}
	}
	ns, err := namespaceConfig(opts)
	if err != nil {
		return err
	}
	// The SQLite package's helper writes the namespace row through the
	// generic SQL persistence layer, so it serves any SQL plugin.
	if err := sqlite.CreateNamespaces(main, ns); err != nil {
		return fmt.Errorf("devtemporal: register namespace %q: %w", opts.Namespace, err)
	}
	return nil
}

// setupDatabase creates the database unless it exists, then its schema
// unless it has a version: the embedded schema file's statements and the
// version tables, as temporal-sql-tool setup-schema does (its package
// needs a command-line library this module does not link).
func setupDatabase(cfg *config.SQL, schemaDir, version string, logger log.Logger) error {
	admin := *cfg
	admin.DatabaseName = "" // the plugin connects to the default database
	adb, err := sql.NewSQLAdminDB(sqlplugin.DbKindUnknown, &admin, resolver.NewNoopResolver(), logger, metrics.NoopMetricsHandler)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	err = adb.CreateDatabase(cfg.DatabaseName)
	_ = adb.Close()
	if err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("create: %w", err)
	}
	db, err := sql.NewSQLAdminDB(sqlplugin.DbKindUnknown, cfg, resolver.NewNoopResolver(), logger, metrics.NoopMetricsHandler)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = db.Close() }()
	if v, err := db.ReadSchemaVersion(cfg.DatabaseName); err == nil && v != "" {
		return nil
	}
	file, err := fs.ReadFile(schema.Assets(), path.Join(schemaDir, "schema.sql"))
	if err != nil {
		return fmt.Errorf("schema %s: %w", schemaDir, err)
	}
	stmts, err := persistence.LoadAndSplitQueryFromReaders([]io.Reader{bytes.NewReader(file)})
	if err != nil {
		return fmt.Errorf("schema %s: %w", schemaDir, err)
	}
	if err := db.CreateSchemaVersionTables(); err != nil {
		return fmt.Errorf("schema version tables: %w", err)
	}
	for _, stmt := range stmts {
		if err := db.Exec(stmt); err != nil {
			return fmt.Errorf("schema %s: %w", schemaDir, err)
		}
	}
	if err := db.UpdateSchemaVersion(cfg.DatabaseName, version, version); err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if err := db.WriteSchemaUpdateLog("0", version, "", "initial version"); err != nil {
		return fmt.Errorf("schema update log: %w", err)
	}
	return nil
}

// isAlreadyExists reports whether err is PostgreSQL's duplicate_database
// (SQLSTATE 42P04).
func isAlreadyExists(err error) bool {
	return strings.Contains(err.Error(), "42P04")
}
