package devtemporal

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/types/known/durationpb"

	appconfig "github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// Defaults applied to zero Options fields. The namespace defaults to
// runs.DefaultNamespace.
const (
	// DefaultIP is the address every service binds to.
	DefaultIP = "127.0.0.1"
	// DefaultRetention is the retention of closed workflows.
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultLogLevel is the level of the server's own logs. Temporal is
	// chatty at info; warn keeps the process output readable.
	DefaultLogLevel = zapcore.WarnLevel
)

// clusterName is the name of the single local cluster.
const clusterName = "active"

// Options configure Start. The zero value is a usable in-memory server on
// 127.0.0.1 with free ports, namespace runs.DefaultNamespace and the OpenWOP
// search attributes.
type Options struct {
	// DBFile is the SQLite database file. It is created (with its schema) if
	// it does not exist; its directory must exist. Empty means an in-memory
	// database that disappears with the process. A new database keeps its
	// visibility store (the records that list workflows) in a second file
	// beside it, VisibilityFile(DBFile); one created before that layout
	// keeps it inside DBFile.
	DBFile string
	// IP is the address every service binds to. Default 127.0.0.1.
	IP string
	// Port is the frontend gRPC port, the one clients dial. 0 picks a free
	// port. The history, matching and worker services always use free ports.
	Port int
	// Namespace is registered before the server starts. Default
	// runs.DefaultNamespace.
	Namespace string
	// Retention is the namespace's retention of closed workflows, applied
	// when the namespace is first created. Default 7 days.
	Retention time.Duration
	// NoSearchAttributes leaves the namespace without the OpenWOP search
	// attributes (signals.SearchAttributes), e.g. to test a namespace that
	// lacks them. By default they are registered with a new database and
	// added at start to an existing one that lacks them.
	NoSearchAttributes bool
	// Logger receives the server's logs. nil discards them.
	Logger *zap.Logger
	// LogLevel is the minimum level of the server's logs passed to Logger.
	// nil means DefaultLogLevel (warn).
	LogLevel *zapcore.Level
	// UIPort, when positive, serves the Temporal Web UI on IP:UIPort.
	UIPort int
	// Postgres, when set, persists the server in PostgreSQL with SQL
	// visibility instead of SQLite; DBFile is then ignored.
	Postgres *Postgres
	// HistoryShards is the number of history shards, fixed when the
	// database is created: every later start and every node of a cluster
	// must give the same. Default 1.
	HistoryShards int
	// ClusterNode makes the server one node of a cluster: its services
	// find the other nodes' through the database (Temporal's ringpop
	// membership) instead of knowing only their own, so several processes
	// on one Postgres database form one Temporal cluster and share its
	// shards. The node's ports are fixed, Port (which must be set) and the
	// eight after it: frontend, history, matching and worker gRPC, their
	// four membership ports, the frontend's HTTP API (FreeClusterPort
	// picks one). Requires Postgres.
	ClusterNode bool
}

// Server is a running embedded Temporal server.
type Server struct {
	server    temporal.Server
	ui        *uiServer
	address   string
	namespace string
	dbFile    string
	logger    *zap.Logger
	level     zap.AtomicLevel
	// dc is the server's dynamic config, changed once the search
	// attributes are registered.
	dc *dynamicconfig.MemoryClient
}

// Start starts the server and returns once its frontend answers for the
// namespace and the search attributes are registered. ctx bounds the
// startup wait only; the server runs until Stop.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts = withDefaults(opts)
	// The level is raised to error during Stop, which otherwise logs a
	// burst of harmless warnings from the server's internal workers.
	level := zap.NewAtomicLevelAt(*opts.LogLevel)
	logger := opts.Logger.WithOptions(zap.IncreaseLevel(level))

	if opts.DBFile != "" {
		abs, err := filepath.Abs(opts.DBFile)
		if err != nil {
			return nil, fmt.Errorf("devtemporal: database file %q: %w", opts.DBFile, err)
		}
		opts.DBFile = abs
	}
	persistence, err := preparePersistence(opts)
	if err != nil {
		return nil, err
	}
	ports, err := ports(opts)
	if err != nil {
		return nil, err
	}
	cfg := serverConfig(persistence, opts.IP, ports)
	address := net.JoinHostPort(opts.IP, strconv.Itoa(ports.grpc[primitives.FrontendService]))

	dc := dynamicConfig(opts.ClusterNode)
	serverOpts := []temporal.ServerOption{
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(log.NewZapLogger(logger)),
		temporal.WithCustomMetricsHandler(metrics.NoopMetricsHandler),
		temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper {
			return authorization.NewNoopClaimMapper()
		}),
		temporal.WithDynamicConfigClient(dc),
	}
	if !opts.ClusterNode {
		// One process is the whole cluster: every service knows only its
		// own address, and no membership traffic or table is needed.
		hosts := make(map[primitives.ServiceName]static.Hosts, len(ports.grpc))
		for svc, port := range ports.grpc {
			hosts[svc] = static.SingleLocalHost(net.JoinHostPort(opts.IP, strconv.Itoa(port)))
		}
		serverOpts = append(serverOpts, temporal.WithStaticHosts(hosts))
	}
	srv, err := temporal.NewServer(serverOpts...)
	if err != nil {
		return nil, fmt.Errorf("devtemporal: create server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("devtemporal: start server: %w", err)
	}
	s := &Server{server: srv, address: address, namespace: opts.Namespace, dbFile: opts.DBFile, logger: logger, level: level, dc: dc}

	if err := s.waitReady(ctx, !opts.NoSearchAttributes); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if opts.UIPort > 0 {
		ui, err := startUI(ctx, opts.IP, opts.UIPort, address, opts.Namespace)
		if err != nil {
			_ = s.Stop()
			return nil, err
		}
		s.ui = ui
	}
	return s, nil
}

// Address is the frontend host:port clients dial.
func (s *Server) Address() string { return s.address }

// Namespace is the namespace registered at start.
func (s *Server) Namespace() string { return s.namespace }

// DBFile is the absolute path of the SQLite file, or "" for in-memory.
func (s *Server) DBFile() string { return s.dbFile }

// UIURL is the base URL of the Web UI, or "" when it is not served.
func (s *Server) UIURL() string {
	if s.ui == nil {
		return ""
	}
	return "http://" + s.ui.address
}

// Stop stops the UI and the server. Workflows in flight stay in the
// database (with a file) and continue after the next Start.
func (s *Server) Stop() error {
	if s.ui != nil {
		s.ui.stop()
		s.ui = nil
	}
	if s.level.Level() < zapcore.ErrorLevel {
		s.level.SetLevel(zapcore.ErrorLevel)
	}
	if err := s.server.Stop(); err != nil {
		return fmt.Errorf("devtemporal: stop server: %w", err)
	}
	return nil
}

func withDefaults(opts Options) Options {
	opts.IP = cmp.Or(opts.IP, DefaultIP)
	opts.Namespace = cmp.Or(opts.Namespace, runs.DefaultNamespace)
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.LogLevel == nil {
		level := DefaultLogLevel
		opts.LogLevel = &level
	}
	if opts.HistoryShards <= 0 {
		opts.HistoryShards = 1
	}
	return opts
}

// preparePersistence readies the database (schema, namespace) and returns
// the server's persistence config.
func preparePersistence(opts Options) (config.Persistence, error) {
	if opts.ClusterNode && (opts.Postgres == nil || opts.Port == 0) {
		return config.Persistence{}, errors.New("devtemporal: a cluster node needs Postgres and a Port")
	}
	shards := int32(opts.HistoryShards)
	if opts.Postgres != nil {
		if err := preparePostgres(*opts.Postgres, opts); err != nil {
			return config.Persistence{}, err
		}
		return opts.Postgres.persistence(shards), nil
	}
	visFile, err := visibilityLayout(opts.DBFile)
	if err != nil {
		return config.Persistence{}, err
	}
	sqlCfg, err := sqlConfig(opts.DBFile)
	if err != nil {
		return config.Persistence{}, err
	}
	p := config.Persistence{
		DefaultStore:     sqliteplugin.PluginName,
		VisibilityStore:  sqliteplugin.PluginName,
		NumHistoryShards: shards,
		DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
	}
	if visFile != "" {
		// Before the database: a database without its visibility file
		// would keep visibility inside from then on.
		visCfg, err := sqlConfig(visFile)
		if err != nil {
			return config.Persistence{}, err
		}
		if err := prepareSchema(visCfg); err != nil {
			return config.Persistence{}, err
		}
		p.VisibilityStore = visibilityStore
		p.DataStores[visibilityStore] = config.DataStore{SQL: visCfg}
	}
	if err := prepareDatabase(sqlCfg, opts); err != nil {
		return config.Persistence{}, err
	}
	return p, nil
}

// visibilityStore names the data store of a visibility file.
const visibilityStore = "sqlite-visibility"

// VisibilityFile is the file that keeps the visibility store of the SQLite
// database dbFile: beside it, with "-visibility" before its extension
// (data/temporal.db: data/temporal-visibility.db).
//
// Visibility gets a file, and so a connection, of its own because the
// SQLite plugin gives each file one connection for the whole process:
// in one file, every visibility write (a run's start, each upsert of its
// status or published state, its close) waits for the history's writes
// and delays them in turn.
func VisibilityFile(dbFile string) string {
	ext := filepath.Ext(dbFile)
	return strings.TrimSuffix(dbFile, ext) + "-visibility" + ext
}

// visibilityLayout is the file of dbFile's visibility store: VisibilityFile
// for a new database or one created with it, "" for an in-memory database
// or a database file created before visibility had a file of its own,
// which keeps it.
func visibilityLayout(dbFile string) (string, error) {
	if dbFile == "" {
		return "", nil
	}
	vis := VisibilityFile(dbFile)
	dbExists, err := exists(dbFile)
	if err != nil {
		return "", fmt.Errorf("devtemporal: database file: %w", err)
	}
	visExists, err := exists(vis)
	if err != nil {
		return "", fmt.Errorf("devtemporal: visibility file: %w", err)
	}
	switch {
	case visExists && !dbExists:
		return "", fmt.Errorf("devtemporal: visibility file %s exists without its database %s: remove it too to start afresh", vis, dbFile)
	case dbExists && !visExists:
		return "", nil
	}
	return vis, nil
}

// exists reports whether the file exists.
func exists(file string) (bool, error) {
	_, err := os.Stat(file)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// sqlConfig is the SQLite persistence config for a file, or for a fresh
// in-memory database when file is "".
func sqlConfig(file string) (*config.SQL, error) {
	if file == "" {
		// The plugin shares one connection per DSN for the life of the
		// process, so a unique name gives every in-memory server its own
		// database.
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("devtemporal: in-memory database name: %w", err)
		}
		return &config.SQL{
			PluginName:        sqliteplugin.PluginName,
			DatabaseName:      "openwop-" + hex.EncodeToString(b[:]),
			ConnectAttributes: map[string]string{"mode": "memory", "cache": "shared"},
		}, nil
	}
	return &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: file,
		// Keys that are not DSN parameters become pragmas:
		// journal_mode=wal (writers do not block readers) and, in WAL
		// mode, synchronous=normal: a commit is written to the WAL but
		// synced only at checkpoints, so it survives the process being
		// killed and may be lost only with the machine (power loss, OS
		// crash). Syncing every commit (full) made the one connection
		// wait on the disk for each of the history's writes.
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"},
	}, nil
}

// prepareDatabase creates the schema of a new database file and registers
// the namespace with its search attributes, unless it exists already.
func prepareDatabase(sqlCfg *config.SQL, opts Options) error {
	if opts.DBFile != "" {
		if err := prepareSchema(sqlCfg); err != nil {
			return err
		}
	}
	ns, err := namespaceConfig(opts)
	if err != nil {
		return err
	}
	if err := sqlite.CreateNamespaces(sqlCfg, ns); err != nil {
		return fmt.Errorf("devtemporal: register namespace %q: %w", opts.Namespace, err)
	}
	return nil
}

// prepareSchema creates the schema of a new database file. The schema
// package creates both Temporal schemas, execution and visibility, in one
// file: a visibility file holds the execution tables too, left empty.
func prepareSchema(sqlCfg *config.SQL) error {
	file := sqlCfg.DatabaseName
	switch ok, err := exists(file); {
	case err != nil:
		return fmt.Errorf("devtemporal: database file: %w", err)
	case ok:
		return nil
	}
	if _, err := os.Stat(filepath.Dir(file)); err != nil {
		return fmt.Errorf("devtemporal: database directory: %w", err)
	}
	if err := sqlite.SetupSchema(sqlCfg); err != nil {
		return fmt.Errorf("devtemporal: create schema in %s: %w", file, err)
	}
	return nil
}

// namespaceConfig is the namespace to register before the server starts,
// with the OpenWOP search attributes unless NoSearchAttributes.
func namespaceConfig(opts Options) (*sqlite.NamespaceConfig, error) {
	attrs := map[string]enumspb.IndexedValueType{}
	if !opts.NoSearchAttributes {
		for _, name := range signals.SearchAttributes {
			attrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	ns, err := sqlite.NewNamespaceConfig(clusterName, opts.Namespace, false, attrs)
	if err != nil {
		return nil, fmt.Errorf("devtemporal: namespace %q: %w", opts.Namespace, err)
	}
	ns.Detail.Config.Retention = durationpb.New(opts.Retention)
	return ns, nil
}

// nodePorts are the ports of a server's services.
type nodePorts struct {
	grpc map[primitives.ServiceName]int
	// membership is empty unless the server is a cluster node.
	membership map[primitives.ServiceName]int
	// http is the frontend's HTTP API (also used for Nexus).
	http int
}

// services are the four Temporal services, in the order of a cluster
// node's ports.
var services = []primitives.ServiceName{
	primitives.FrontendService, primitives.HistoryService, primitives.MatchingService, primitives.WorkerService,
}

// ports assigns the server's ports: a cluster node's nine from Port on,
// else Port (or a free one when 0) to the frontend and free ports to the
// rest.
func ports(opts Options) (nodePorts, error) {
	if !opts.ClusterNode {
		grpc, err := servicePorts(opts.IP, opts.Port)
		if err != nil {
			return nodePorts{}, err
		}
		httpPort, err := freePort(opts.IP)
		if err != nil {
			return nodePorts{}, err
		}
		return nodePorts{grpc: grpc, http: httpPort}, nil
	}
	p := nodePorts{grpc: map[primitives.ServiceName]int{}, membership: map[primitives.ServiceName]int{}, http: opts.Port + ClusterPorts - 1}
	for i, svc := range services {
		p.grpc[svc] = opts.Port + i
		p.membership[svc] = opts.Port + len(services) + i
	}
	for port := opts.Port; port <= p.http; port++ {
		if err := checkFree(opts.IP, port, "cluster node address"); err != nil {
			return nodePorts{}, err
		}
	}
	return p, nil
}

// checkFree fails unless ip:port can be bound (the server exits the
// process when it cannot bind); what names the address in the error.
func checkFree(ip string, port int, what string) error {
	address := net.JoinHostPort(ip, strconv.Itoa(port))
	l, err := net.Listen("tcp", address)
	if err != nil {
		return fmt.Errorf("devtemporal: %s %s: %w", what, address, err)
	}
	return l.Close()
}

// servicePorts assigns a gRPC port to each service: frontendPort (or a free
// one when 0) to the frontend, free ports to the others.
func servicePorts(ip string, frontendPort int) (map[primitives.ServiceName]int, error) {
	ports := map[primitives.ServiceName]int{}
	for _, svc := range services {
		if svc == primitives.FrontendService && frontendPort != 0 {
			if err := checkFree(ip, frontendPort, "frontend address"); err != nil {
				return nil, err
			}
			ports[svc] = frontendPort
			continue
		}
		port, err := freePort(ip)
		if err != nil {
			return nil, err
		}
		ports[svc] = port
	}
	return ports, nil
}

// freePort asks the kernel for a free TCP port on ip. It connects to the
// port once and closes the server side first, which leaves the port in
// TIME_WAIT: the kernel will not hand it out again for a while, but a
// listener with SO_REUSEADDR (Go's default) can still bind it.
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("devtemporal: find a free port: %w", err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err == nil {
		if sc := <-accepted; sc != nil {
			_ = sc.Close()
		}
		_ = c.Close()
	}
	return port, nil
}

func serverConfig(persistence config.Persistence, ip string, ports nodePorts) *config.Config {
	frontend := net.JoinHostPort(ip, strconv.Itoa(ports.grpc[primitives.FrontendService]))
	httpPort := ports.http
	services := make(map[string]config.Service, len(ports.grpc))
	for svc, port := range ports.grpc {
		rpc := config.RPC{GRPCPort: port, MembershipPort: ports.membership[svc], BindOnIP: ip}
		if svc == primitives.FrontendService {
			rpc.HTTPPort = httpPort
		}
		services[string(svc)] = config.Service{RPC: rpc}
	}
	disabled := "disabled"
	return &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: ip},
		},
		Persistence: persistence,
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {
					Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend,
					HTTPAddress: net.JoinHostPort(ip, strconv.Itoa(httpPort)),
				},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            services,
		Archival: config.Archival{
			History:    config.HistoryArchival{State: disabled},
			Visibility: config.VisibilityArchival{State: disabled},
		},
		NamespaceDefaults: config.NamespaceDefaults{
			Archival: config.ArchivalNamespaceDefaults{
				History:    config.HistoryArchivalNamespaceDefaults{State: disabled},
				Visibility: config.VisibilityArchivalNamespaceDefaults{State: disabled},
			},
		},
		PublicClient: config.PublicClient{HostPort: frontend},
	}
}

// waitReady dials the frontend, waits until the namespace answers, and,
// with searchAttributes, adds any OpenWOP search attribute the namespace
// lacks (a database created before the attribute existed) and then turns
// the forced search attribute refresh off (stopForcedRefresh).
func (s *Server) waitReady(ctx context.Context, searchAttributes bool) error {
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  s.address,
		Namespace: s.namespace,
		Logger:    SDKLogger(s.logger),
	})
	if err != nil {
		return fmt.Errorf("devtemporal: dial %s: %w", s.address, err)
	}
	defer c.Close()

	for {
		_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.namespace})
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devtemporal: namespace %q not ready: %w", s.namespace, errors.Join(err, ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !searchAttributes {
		return nil
	}
	if err := runs.EnsureSearchAttributes(ctx, c, s.namespace); err != nil {
		return fmt.Errorf("devtemporal: %w", err)
	}
	return s.stopForcedRefresh(ctx, c)
}

// SDKLogger is the shared internal/app/config.SDKLogger: a zap logger adapted to the Temporal
// SDK's logger interface.
func SDKLogger(zl *zap.Logger) sdklog.Logger { return appconfig.SDKLogger(zl) }

// ClusterPorts is the number of consecutive ports a ClusterNode uses from
// its Port on.
const ClusterPorts = 9

// FreeClusterPort returns a Port for a ClusterNode on ip whose
// ClusterPorts ports are all free now. The ports are below 32768: the SQL
// schemas store a membership port as a 16-bit signed integer, and the
// kernel hands out ephemeral ports above that, so a port picked here is
// also less likely to be taken by an outgoing connection later.
func FreeClusterPort(ip string) (int, error) {
	const lowest, highest = 20000, 32767 - ClusterPorts
	for range 200 {
		base := lowest + mathrand.IntN(highest-lowest)
		free := true
		for p := base; p < base+ClusterPorts && free; p++ {
			free = checkFree(ip, p, "") == nil
		}
		if free {
			return base, nil
		}
	}
	return 0, errors.New("devtemporal: no free range of cluster ports below 32768")
}
