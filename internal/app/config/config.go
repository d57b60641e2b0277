package config

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/upstream"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/telemetry/export"
)

// Environment variables of the commands (Vars declares them, with their
// defaults and meanings). The Temporal connection variables
// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*,
// TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE, ...) are read by the Temporal
// SDK's envconfig package; see docs/configuration.md.
const (
	// EnvHTTPAddr is the HTTP listen address (default 127.0.0.1:8080).
	EnvHTTPAddr = "OPENWOP_HTTP_ADDR"
	// EnvTaskQueue is the task queue of the tool workflows (default openwop-tools).
	EnvTaskQueue = "OPENWOP_TASK_QUEUE"
	// EnvWorker turns the in-process worker of cmd/server on or off (default on).
	EnvWorker = "OPENWOP_WORKER"
	// EnvCompanionTools turns the MCP mount's companion tools on or off
	// (default on; mcpmount.Options.NoCompanionTools).
	EnvCompanionTools = "OPENWOP_COMPANION_TOOLS"
	// EnvResultLimit is the size in bytes over which an MCP tool result is
	// answered with its head and a resource_link to the whole (default
	// 50000; 0: none; mcpmount.Options.ResultLimit).
	EnvResultLimit = "OPENWOP_RESULT_LIMIT"
	// EnvRunListTool turns the MCP mount's list tool (openwop_run_list)
	// on or off (default on; mcpmount.Options.NoRunListTool).
	EnvRunListTool = "OPENWOP_RUN_LIST_TOOL"
	// EnvMaxBlockingWait bounds how long a task-less MCP tools/call waits
	// before it is answered with a handoff (default DefaultMaxBlockingWait;
	// mcpmount.Options.MaxBlockingWait).
	EnvMaxBlockingWait = "OPENWOP_MAX_BLOCKING_WAIT"
	// EnvFixtures adds the conformance fixture tools to the registry
	// (default off).
	EnvFixtures = "OPENWOP_FIXTURES"
	// EnvUpstreamsFile names a JSON file of upstream MCP servers whose
	// tools the worker serves (internal/upstream, docs/upstreams.md;
	// default none).
	EnvUpstreamsFile = "OPENWOP_UPSTREAMS_FILE"
	// EnvTemporalGzip turns on gzip for the gRPC requests to Temporal
	// (default off: most requests are a few hundred bytes, where gzip
	// costs more CPU than the bytes it saves).
	EnvTemporalGzip = "OPENWOP_TEMPORAL_GZIP"
	// EnvToolsFile names a JSON file of declared tools
	// (catalog.LoadDeclarations) that cmd/server serves besides the
	// published ones (default none).
	EnvToolsFile = "OPENWOP_TOOLS_FILE"
	// EnvLogFormat is json or console (default console with the embedded
	// server, json with a remote Temporal).
	EnvLogFormat = "OPENWOP_LOG_FORMAT"
	// EnvLogLevel is the level of the process logs (default info).
	EnvLogLevel = "OPENWOP_LOG_LEVEL"
	// EnvDataDir is the directory of the embedded server's SQLite file
	// temporal.db (default ./data).
	EnvDataDir = "OPENWOP_DATA_DIR"
	// EnvTemporalPort is the embedded server's frontend port (default
	// 7233; 0 picks a free port).
	EnvTemporalPort = "OPENWOP_TEMPORAL_PORT"
	// EnvUIPort is the embedded Web UI port (default 8233; 0 picks a free
	// port; off disables the UI).
	EnvUIPort = "OPENWOP_UI_PORT"
	// EnvTemporalLogLevel is the level of the embedded server's own logs
	// (default warn).
	EnvTemporalLogLevel = "OPENWOP_TEMPORAL_LOG_LEVEL"
	// EnvPublicURL is the external base URL of the server (e.g.
	// https://wop.example.com). Links the server writes start with it, and
	// its host and origin pass the request gate. Default: links name the
	// address each connection arrived on.
	EnvPublicURL = "OPENWOP_PUBLIC_URL"
	// EnvAllowedHosts lists further Host header values the request gate
	// accepts (host or host:port, comma-separated).
	EnvAllowedHosts = "OPENWOP_ALLOWED_HOSTS"
	// EnvAllowedOrigins lists further Origin header values the request
	// gate accepts (scheme://host[:port], comma-separated).
	EnvAllowedOrigins = "OPENWOP_ALLOWED_ORIGINS"
	// EnvHTTPReadTimeout bounds the arrival of a whole request, headers and
	// body (a Go duration; default DefaultHTTPReadTimeout). Responses are
	// not bounded.
	EnvHTTPReadTimeout = "OPENWOP_HTTP_READ_TIMEOUT"
	// EnvHTTPIdleTimeout closes idle keep-alive connections (a Go duration;
	// default DefaultHTTPIdleTimeout).
	EnvHTTPIdleTimeout = "OPENWOP_HTTP_IDLE_TIMEOUT"
	// EnvHTTPMaxConns bounds the open HTTP connections (default
	// DefaultHTTPMaxConns).
	EnvHTTPMaxConns = "OPENWOP_HTTP_MAX_CONNS"
	// EnvMetricsAddr is the listen address (host:port) of the Prometheus
	// endpoint GET /metrics (default off: no metrics are recorded).
	EnvMetricsAddr = "OPENWOP_METRICS_ADDR"
	// EnvMaxStarts bounds the run starts in progress at once, all tenants
	// together (default admission.DefaultMaxStarts).
	EnvMaxStarts = "OPENWOP_MAX_STARTS"
	// EnvMaxBlockingCalls bounds the blocking tools/call requests waiting
	// for their runs at once (default admission.DefaultMaxWaiting).
	EnvMaxBlockingCalls = "OPENWOP_MAX_BLOCKING_CALLS"
	// EnvTenantMaxCalls bounds one tenant's starts in progress and
	// blocking calls waiting, together (default
	// admission.DefaultTenantMax).
	EnvTenantMaxCalls = "OPENWOP_TENANT_MAX_CALLS"
	// EnvTemporalMaxCalls bounds the Temporal calls the run service makes
	// at once; more wait in the process (default
	// runs.DefaultMaxTemporalCalls; runs.Options.MaxTemporalCalls).
	EnvTemporalMaxCalls = "OPENWOP_TEMPORAL_MAX_CALLS"
	// EnvAPIKeys lists Bearer API keys, key=tenant:subject,...
	// (auth.ParseKeys). Unset, and no EnvAPIKeysFile: development mode,
	// every caller is the anonymous local tenant.
	EnvAPIKeys = "OPENWOP_API_KEYS"
	// EnvAPIKeysFile names a JSON file of API keys (auth.LoadFile),
	// merged with EnvAPIKeys.
	EnvAPIKeysFile = "OPENWOP_API_KEYS_FILE"
	// EnvAuditLog is the audit trail's sink (audit.Open): stderr (the
	// default), stdout, off or a file path.
	EnvAuditLog = "OPENWOP_AUDIT_LOG"
	// EnvMRTRKey is the HMAC key (MinMRTRKey bytes or more) of MRTR
	// requestStates, listRuns cursors and idempotent calls' run ids.
	// Unset: cmd/server keeps a generated one in the data directory
	// (datadir.Key), except with -stdio on a remote Temporal (a random key
	// per process).
	EnvMRTRKey = "OPENWOP_MRTR_KEY"
	// EnvStdioTenant and EnvStdioSubject name the caller of cmd/server
	// -stdio. Unset: the anonymous local tenant.
	EnvStdioTenant  = "OPENWOP_STDIO_TENANT"
	EnvStdioSubject = "OPENWOP_STDIO_SUBJECT"
	// EnvNexusTenants maps the namespaces whose workflows may call the
	// tools as Nexus operations to tenants: "namespace=tenant,...". Set,
	// cmd/server serves the tools' Nexus service (package nexusfront) on
	// EnvNexusTaskQueue.
	EnvNexusTenants = "OPENWOP_NEXUS_TENANTS"
	// EnvNexusTaskQueue is the task queue of the Nexus service's worker,
	// the one a Nexus endpoint targets (default DefaultNexusTaskQueue).
	EnvNexusTaskQueue = "OPENWOP_NEXUS_TASK_QUEUE"
)

// DefaultNexusTaskQueue is the task queue of the Nexus service's worker
// when EnvNexusTaskQueue is unset.
const DefaultNexusTaskQueue = "openwop-nexus"

// Environment variables of the Temporal SDK that select a remote server.
const (
	// EnvTemporalAddress is the frontend host:port.
	EnvTemporalAddress = "TEMPORAL_ADDRESS"
	// EnvTemporalNamespace is the namespace (default runs.DefaultNamespace).
	EnvTemporalNamespace = "TEMPORAL_NAMESPACE"
	// EnvTemporalProfile selects a profile of the TOML configuration file.
	EnvTemporalProfile = "TEMPORAL_PROFILE"
	// EnvTemporalConfigFile is the TOML configuration file.
	EnvTemporalConfigFile = "TEMPORAL_CONFIG_FILE"
	// EnvTemporalAPIKey is the API key to Temporal (Temporal Cloud).
	EnvTemporalAPIKey = "TEMPORAL_API_KEY"
	// EnvTemporalTLS forces TLS on or off (on/off, true/false, yes/no,
	// 1/0).
	EnvTemporalTLS = "TEMPORAL_TLS"
	// EnvTemporalTLSNoVerify turns host verification off (a switch like
	// EnvTemporalTLS).
	EnvTemporalTLSNoVerify = "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"
)

// Environment variables naming the Worker Deployment version of the
// stock worker (workflows.WorkerOptions' DeploymentName and BuildID). The
// Temporal SDK reads none of its own; these are the names the Temporal
// Worker Controller sets in a worker's environment.
const (
	// EnvDeploymentName is the Worker Deployment's name.
	EnvDeploymentName = "TEMPORAL_DEPLOYMENT_NAME"
	// EnvBuildID is the worker's build id within the deployment.
	EnvBuildID = "TEMPORAL_WORKER_BUILD_ID"
)

// Log formats.
const (
	// LogJSON is JSON lines (production).
	LogJSON = "json"
	// LogConsole is human-readable lines (development).
	LogConsole = "console"
)

// Defaults of Config. The task queue and the namespace default to
// runs.DefaultTaskQueue and runs.DefaultNamespace.
const (
	// DefaultHTTPAddr is the HTTP listen address of cmd/server.
	DefaultHTTPAddr = "127.0.0.1:8080"
	// DefaultDataDir holds the embedded server's database and the reports.
	DefaultDataDir = "data"
	// DefaultTemporalPort is the embedded server's frontend port.
	DefaultTemporalPort = 7233
	// DefaultUIPort is the embedded Web UI's port.
	DefaultUIPort = 8233
	// DBFileName is the embedded server's database file in the data dir.
	DBFileName = "temporal.db"
	// DialTimeout bounds the first connection to Temporal.
	DialTimeout = 2 * time.Minute
	// DefaultHTTPReadTimeout bounds the arrival of a request (headers and
	// body).
	DefaultHTTPReadTimeout = 20 * time.Second
	// DefaultMaxBlockingWait is the MCP mount's default handoff bound
	// (mcpmount.DefaultMaxBlockingWait, which this package cannot import).
	DefaultMaxBlockingWait = 45 * time.Second
	// DefaultHTTPIdleTimeout closes idle keep-alive connections.
	DefaultHTTPIdleTimeout = 30 * time.Second
	// DefaultHTTPMaxConns bounds the open HTTP connections.
	DefaultHTTPMaxConns = 1000
	// DefaultAuditLog is the audit trail's sink when EnvAuditLog is unset.
	DefaultAuditLog = audit.SinkStderr
	// MinMRTRKey is the shortest EnvMRTRKey accepted, in bytes.
	MinMRTRKey = 32
)

// Config is the process configuration. LoadConfig (cmd/worker) and
// LoadServer (cmd/server) read it from the environment.
type Config struct {
	// HTTPAddr is the HTTP listen address (host:port; port 0 picks one).
	HTTPAddr string
	// TaskQueue is the task queue the worker polls and runs start on.
	TaskQueue string
	// DeploymentName and BuildID, both set or neither, make the worker a
	// version of a Temporal Worker Deployment (EnvDeploymentName,
	// EnvBuildID).
	DeploymentName, BuildID string
	// Worker runs a worker in the server process.
	Worker bool
	// Fixtures adds the conformance fixture tools.
	Fixtures bool
	// UpstreamsFile is the file of upstream MCP servers ("" when unset)
	// and Upstreams its checked entries (EnvUpstreamsFile).
	UpstreamsFile string
	Upstreams     upstream.File
	// TemporalGzip gzips the gRPC requests to Temporal (EnvTemporalGzip).
	TemporalGzip bool
	// LogFormat is LogJSON or LogConsole.
	LogFormat string
	// LogLevel is the minimum level of the process logs.
	LogLevel zapcore.Level

	// Remote is true when TEMPORAL_ADDRESS, TEMPORAL_PROFILE or
	// TEMPORAL_CONFIG_FILE is set: the process then connects to that
	// server with Client and embeds nothing.
	Remote bool
	// Client are the connection options loaded by envconfig (the TOML
	// profile when TEMPORAL_PROFILE or TEMPORAL_CONFIG_FILE asks for one,
	// then the TEMPORAL_* variables). With no variable set they
	// dial localhost:7233, namespace runs.DefaultNamespace, which is where
	// cmd/worker finds the server embedded by cmd/server.
	Client client.Options

	// PublicURL is the configured external base URL ("" when unset), no
	// trailing slash.
	PublicURL string
	// AllowedHosts and AllowedOrigins are the further Host and Origin
	// header values the request gate accepts.
	AllowedHosts, AllowedOrigins []string
	// HTTPReadTimeout, HTTPIdleTimeout and HTTPMaxConns are the connection
	// limits of the HTTP listener (zero: the defaults).
	HTTPReadTimeout, HTTPIdleTimeout time.Duration
	HTTPMaxConns                     int
	// Admission are the limits of admission control (the starts in
	// progress, the blocking calls waiting, one tenant's share); zero
	// fields mean the admission package's defaults.
	Admission admission.Options
	// TemporalMaxCalls bounds the Temporal calls the run service makes at
	// once (runs.Options.MaxTemporalCalls).
	TemporalMaxCalls int

	// DataDir holds the embedded server's database (DBFile).
	DataDir string
	// TemporalPort is the embedded frontend port (0: a free port).
	TemporalPort int
	// UI serves the embedded Web UI on UIPort.
	UI bool
	// UIPort is the embedded Web UI port (0: a free port).
	UIPort int
	// TemporalLogLevel is the level of the embedded server's logs.
	TemporalLogLevel zapcore.Level

	// MetricsAddr is the listen address of the Prometheus endpoint (""
	// when metrics are off).
	MetricsAddr string
	// Tracing is what the OTEL_* variables ask of tracing
	// (export.Options.Tracing).
	Tracing export.TracingConfig
	// ShareDataDir, when DataDir is held by another process (it runs the
	// embedded server on it), uses that process's Temporal server instead
	// of failing, and takes the directory over if that process exits. Not
	// read from a variable: LoadServer sets it with stdio.
	ShareDataDir bool

	// Server are the settings only cmd/server reads (LoadServer).
	Server ServerConfig
}

// ServerConfig are the settings of cmd/server alone: its callers, its
// audit trail, its declared tools and its MRTR key.
type ServerConfig struct {
	// Keys are the API keys (EnvAPIKeys, EnvAPIKeysFile); Keys.Dev() when
	// none is configured.
	Keys *auth.Keys
	// OAuth are the OAuth resource server's options (EnvOAuthIssuers, ...;
	// nil: OAuth off).
	OAuth *auth.OAuthOptions
	// AuditLog is the audit trail's sink, for audit.Open (EnvAuditLog).
	AuditLog string
	// ToolsFile is the file of declared tools ("" when unset) and
	// Declared its declarations (EnvToolsFile).
	ToolsFile string
	Declared  []signals.ToolSpec
	// MRTRKey is the HMAC key of MRTR requestStates (EnvMRTRKey; nil: the
	// data directory's, or a random one).
	MRTRKey []byte
	// CompanionTools offers the companion tools to clients that can follow
	// no run by the protocol (EnvCompanionTools).
	CompanionTools bool
	// ResultLimit is the MCP mount's result limit in bytes (EnvResultLimit;
	// 0: the mount's default, negative: none).
	ResultLimit int
	// RunListTool lists the list tool to every MCP client (EnvRunListTool).
	RunListTool bool
	// MaxBlockingWait bounds a task-less MCP call's wait before its
	// handoff (EnvMaxBlockingWait).
	MaxBlockingWait time.Duration
	// StdioCaller is the caller of -stdio (EnvStdioTenant,
	// EnvStdioSubject; auth.Anonymous() when unset).
	StdioCaller signals.Subject
	// NexusTenants maps caller namespaces to tenants (EnvNexusTenants; nil:
	// no Nexus service), and NexusTaskQueue is the task queue of the Nexus
	// service's worker (EnvNexusTaskQueue).
	NexusTenants   map[string]string
	NexusTaskQueue string
}

// Namespace is the namespace runs live in.
func (c Config) Namespace() string {
	if c.Client.Namespace == "" {
		return runs.DefaultNamespace
	}
	return c.Client.Namespace
}

// HostPort is the Temporal frontend Client dials.
func (c Config) HostPort() string {
	if c.Client.HostPort == "" {
		return client.DefaultHostPort
	}
	return c.Client.HostPort
}

// Dial connects to Temporal with Client (the namespace defaulted, the SDK
// logging through logger, tracing and metrics as tel says: nil for none,
// workers heartbeating every catalog.WorkerHeartbeatInterval unless
// Client says otherwise, gRPC requests not compressed unless
// TemporalGzip), waiting at most DialTimeout.
func (c Config) Dial(ctx context.Context, logger *zap.Logger, tel *export.Telemetry) (client.Client, error) {
	opts := c.Client
	opts.Namespace = c.Namespace()
	if !c.TemporalGzip {
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	opts.WorkerHeartbeatInterval = cmp.Or(opts.WorkerHeartbeatInterval, catalog.WorkerHeartbeatInterval)
	opts.Logger = SDKLogger(logger)
	if err := tel.ClientOptions(&opts); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	cl, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w", c.HostPort(), opts.Namespace, err)
	}
	return cl, nil
}

// DBFile is the embedded server's SQLite file.
func (c Config) DBFile() string { return filepath.Join(c.DataDir, DBFileName) }

// ReportsDir is the directory the example tools publish reports to.
func (c Config) ReportsDir() string { return filepath.Join(c.DataDir, "reports") }

func parseSwitch(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "on", "true", "1", "yes":
		return true, nil
	case "off", "false", "0", "no":
		return false, nil
	}
	return false, fmt.Errorf("%q: want on or off", v)
}

func parsePort(v string) (int, error) {
	p, err := strconv.Atoi(v)
	if err != nil || p < 0 || p > 65535 {
		return 0, fmt.Errorf("%q: want a port number 0-65535", v)
	}
	return p, nil
}
