package config

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/runs"
)

// Scope says which commands read a variable and list it in their -h.
type Scope uint8

const (
	// Shared variables are read by cmd/server and cmd/worker, and both
	// list them.
	Shared Scope = iota
	// Server variables are listed by cmd/server only; they are fields of
	// Config, which cmd/worker loads as well, so cmd/worker checks them too.
	Server
	// ServerOnly variables are read (and listed) by cmd/server only: the
	// fields of Config.Server.
	ServerOnly
)

// Var declares environment variables read together: their names, their
// default and meaning as the commands' -h shows them, which commands read
// them, and how they are read. Vars is the one table of them; -h is
// written from it (Usage) and docs/configuration.md is checked against
// it.
type Var struct {
	// Names are the variables. A name ending in "*" stands for the
	// variables it starts (they are read by the Temporal SDK).
	Names []string
	// Default is what applies when they are unset.
	Default string
	// Meaning says what they set.
	Meaning string
	// Scope says which commands read them.
	Scope Scope
	// load reads them into l's Config; nil when another Var's load reads
	// them, or (TEMPORAL_API_KEY, ...) the Temporal SDK's envconfig does.
	load func(l *loader) error
}

// Vars is the table of every environment variable the commands read, in
// the order of cmd/server's -h: the variables of cmd/server alone, then
// those both commands read (WorkerVars).
func Vars() []Var {
	return append(serverVars(), sharedVars()...)
}

// ServerVars are the variables cmd/server reads (all of Vars).
func ServerVars() []Var { return Vars() }

// WorkerVars are the variables cmd/worker lists in its -h (the Shared
// ones).
func WorkerVars() []Var { return sharedVars() }

// serverVars are the variables cmd/server reads and cmd/worker does not
// list.
func serverVars() []Var {
	return []Var{
		{Names: []string{EnvHTTPAddr}, Default: DefaultHTTPAddr + " (-stdio: a free port)", Scope: Server,
			Meaning: "HTTP listen address (MCP at /mcp, REST, /healthz)", load: (*loader).httpAddr},
		{Names: []string{EnvWorker}, Default: "on", Scope: Server, Meaning: "off: run no in-process worker",
			load: func(l *loader) error { return l.onOff(EnvWorker, &l.cfg.Worker) }},
		{Names: []string{EnvToolsFile}, Default: "unset", Scope: ServerOnly, Meaning: "JSON file of declared tools (docs/catalog.md)",
			load: (*loader).toolsFile},
		{Names: []string{EnvTemporalPort}, Default: fmt.Sprint(DefaultTemporalPort) + " (-stdio: a free port)", Scope: Server,
			Meaning: "embedded Temporal frontend port (0: any free port)", load: (*loader).temporalPort},
		{Names: []string{EnvUIPort}, Default: fmt.Sprint(DefaultUIPort) + " (-stdio: a free port)", Scope: Server,
			Meaning: "embedded Web UI port (0: any free port; off: no UI)", load: (*loader).uiPort},
		{Names: []string{EnvTemporalLogLevel}, Default: "warn", Scope: Server, Meaning: "level of the embedded Temporal server's logs",
			load: (*loader).temporalLogLevel},
		{Names: []string{EnvAPIKeys}, Default: "unset (every caller is anon:local)", Scope: ServerOnly,
			Meaning: "API keys: key=tenant:subject,...", load: (*loader).apiKeys},
		{Names: []string{EnvAPIKeysFile}, Default: "unset", Scope: ServerOnly, Meaning: "JSON file of API keys [{key,tenant,subject}]"},
		{Names: []string{EnvAuditLog}, Default: audit.SinkStderr, Scope: ServerOnly,
			Meaning: "the audit trail's sink: stderr, stdout, a file path (appended) or off", load: (*loader).auditLog},
		{Names: []string{EnvOAuthIssuers}, Default: "unset (no OAuth)", Scope: ServerOnly,
			Meaning: "OAuth issuer URLs whose access tokens are accepted (docs/oauth.md); needs " + EnvPublicURL, load: (*loader).oauth},
		{Names: []string{EnvOAuthTenantClaim}, Default: "unset (required with issuers)", Scope: ServerOnly,
			Meaning: "token claim that holds the tenant"},
		{Names: []string{EnvOAuthGroupsClaim}, Default: "unset", Scope: ServerOnly,
			Meaning: "token claim with the caller's groups or roles (approvers \"group:<value>\")"},
		{Names: []string{EnvOAuthRequiredScopes}, Default: "unset", Scope: ServerOnly,
			Meaning: "scopes every request's token needs (space- or comma-separated)"},
		{Names: []string{EnvCompanionTools}, Default: "on", Scope: ServerOnly,
			Meaning: "off: no companion tools (openwop_run_status, _answer, _cancel) for MCP clients that do not declare tasks",
			load:    func(l *loader) error { return l.onOff(EnvCompanionTools, &l.cfg.Server.CompanionTools) }},
		{Names: []string{EnvResultLimit}, Default: "50000", Scope: ServerOnly,
			Meaning: "bytes over which an MCP tool result is its head plus a resource_link to the whole (0: no limit)",
			load: func(l *loader) (err error) {
				l.cfg.Server.ResultLimit, err = parseResultLimit(l.get(EnvResultLimit))
				return err
			}},
		{Names: []string{EnvRunListTool}, Default: "on", Scope: ServerOnly,
			Meaning: "off: no openwop_run_list tool (an MCP client's own runs, as GET /runs lists them)",
			load:    func(l *loader) error { return l.onOff(EnvRunListTool, &l.cfg.Server.RunListTool) }},
		{Names: []string{EnvMaxBlockingWait}, Default: DefaultMaxBlockingWait.String(), Scope: ServerOnly,
			Meaning: "an MCP tools/call that took no task is answered by then with the run's result or a handoff (keep it below the hosts' limits)",
			load: func(l *loader) error {
				return l.timeout(EnvMaxBlockingWait, &l.cfg.Server.MaxBlockingWait, DefaultMaxBlockingWait)
			}},
		{Names: []string{EnvMRTRKey}, Default: "generated once, kept in the data directory's openwop-mrtr.key", Scope: ServerOnly,
			Meaning: "HMAC key (32+ bytes) of MRTR requestStates, listRuns cursors and idempotent calls' run ids", load: (*loader).mrtrKey},
		{Names: []string{EnvPublicURL}, Default: "unset (links name the address a connection arrived on)", Scope: Server,
			Meaning: "external base URL: links in responses; its host and origin are allowed", load: (*loader).publicURL},
		{Names: []string{EnvAllowedHosts}, Default: "unset (loopback hosts only on 127.0.0.1)", Scope: Server,
			Meaning: "further Host header values accepted (host or host:port, comma-separated)", load: (*loader).allowedHosts},
		{Names: []string{EnvAllowedOrigins}, Default: "unset (loopback origins only on 127.0.0.1)", Scope: Server,
			Meaning: "further Origin header values accepted (scheme://host[:port], comma-separated)", load: (*loader).allowedOrigins},
		{Names: []string{EnvHTTPReadTimeout}, Default: DefaultHTTPReadTimeout.String(), Scope: Server,
			Meaning: "a request, headers and body, must arrive within it (responses are not bounded)",
			load: func(l *loader) error {
				return l.timeout(EnvHTTPReadTimeout, &l.cfg.HTTPReadTimeout, DefaultHTTPReadTimeout)
			}},
		{Names: []string{EnvHTTPIdleTimeout}, Default: DefaultHTTPIdleTimeout.String(), Scope: Server,
			Meaning: "idle keep-alive connections close after it",
			load: func(l *loader) error {
				return l.timeout(EnvHTTPIdleTimeout, &l.cfg.HTTPIdleTimeout, DefaultHTTPIdleTimeout)
			}},
		{Names: []string{EnvHTTPMaxConns}, Default: fmt.Sprint(DefaultHTTPMaxConns), Scope: Server,
			Meaning: "most HTTP connections open at once", load: (*loader).httpMaxConns},
		{Names: []string{EnvMaxStarts}, Default: fmt.Sprint(admission.DefaultMaxStarts), Scope: Server,
			Meaning: "most run starts in progress at once; more are refused at once (503, Retry-After)",
			load: func(l *loader) error {
				return l.limit(EnvMaxStarts, &l.cfg.Admission.MaxStarts, admission.DefaultMaxStarts)
			}},
		{Names: []string{EnvMaxBlockingCalls}, Default: fmt.Sprint(admission.DefaultMaxWaiting), Scope: Server,
			Meaning: "most blocking tools/call requests waiting for their runs at once",
			load: func(l *loader) error {
				return l.limit(EnvMaxBlockingCalls, &l.cfg.Admission.MaxWaiting, admission.DefaultMaxWaiting)
			}},
		{Names: []string{EnvTenantMaxCalls}, Default: fmt.Sprint(admission.DefaultTenantMax), Scope: Server,
			Meaning: "most starts in progress plus blocking calls waiting of one tenant",
			load: func(l *loader) error {
				return l.limit(EnvTenantMaxCalls, &l.cfg.Admission.TenantMax, admission.DefaultTenantMax)
			}},
		{Names: []string{EnvTemporalMaxCalls}, Default: fmt.Sprint(runs.DefaultMaxTemporalCalls), Scope: Server,
			Meaning: "most Temporal calls (starts, signals, queries, describes) in flight at once; more wait in the process",
			load: func(l *loader) error {
				return l.limit(EnvTemporalMaxCalls, &l.cfg.TemporalMaxCalls, runs.DefaultMaxTemporalCalls)
			}},
		{Names: []string{EnvStdioTenant, EnvStdioSubject}, Default: "anon:local", Scope: ServerOnly,
			Meaning: "the caller of -stdio", load: (*loader).stdioCaller},
		{Names: []string{EnvNexusTenants}, Default: "unset (no Nexus service)", Scope: ServerOnly,
			Meaning: "namespaces whose workflows may call the tools over Nexus, with their tenants: namespace=tenant,... (docs/nexus.md)",
			load: func(l *loader) (err error) {
				l.cfg.Server.NexusTaskQueue = cmp.Or(l.get(EnvNexusTaskQueue), DefaultNexusTaskQueue)
				l.cfg.Server.NexusTenants, err = loadNexusTenants(l.get(EnvNexusTenants))
				return err
			}},
		{Names: []string{EnvNexusTaskQueue}, Default: DefaultNexusTaskQueue, Scope: ServerOnly,
			Meaning: "task queue of the tools' Nexus service, which the Nexus endpoint targets"},
	}
}

// sharedVars are the variables both commands read: the worker's
// (logging, task queue, tools), telemetry and the Temporal connection.
func sharedVars() []Var {
	return []Var{
		{Names: []string{EnvTaskQueue}, Default: runs.DefaultTaskQueue, Meaning: "task queue the tool workflows run on",
			load: (*loader).taskQueue},
		{Names: []string{EnvDeploymentName, EnvBuildID}, Default: "unset (an unversioned worker)",
			Meaning: "the Worker Deployment and build id of the worker (both or neither; docs/upgrades.md)", load: (*loader).deployment},
		{Names: []string{EnvFixtures}, Default: "off", Meaning: "on: also serve the conformance fixture tools",
			load: func(l *loader) error { return l.onOff(EnvFixtures, &l.cfg.Fixtures) }},
		{Names: []string{EnvUpstreamsFile}, Default: "unset", Meaning: "JSON file of upstream MCP servers whose tools the worker serves (docs/upstreams.md)",
			load: (*loader).upstreamsFile},
		{Names: []string{EnvDataDir}, Default: "./" + DefaultDataDir,
			Meaning: "data directory (published reports; cmd/server: the embedded temporal.db)", load: (*loader).dataDir},
		{Names: []string{EnvLogFormat}, Default: "console (json with a remote Temporal)", Meaning: "json or console",
			load: (*loader).logFormat},
		{Names: []string{EnvLogLevel}, Default: "info", Meaning: "debug, info, warn or error", load: (*loader).logLevel},
		{Names: []string{EnvMetricsAddr}, Default: "off",
			Meaning: "host:port of the Prometheus endpoint GET /metrics (mount and Temporal SDK metrics)", load: (*loader).metricsAddr},
		{Names: []string{EnvOTelEndpoint, EnvOTelTracesEndpoint}, Default: "unset (no tracing)",
			Meaning: "OTLP endpoint: export traces (OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or grpc, OTEL_SERVICE_NAME, other OTEL_* variables as the OpenTelemetry SDK reads them)",
			load:    (*loader).tracing},
		{Names: []string{EnvTemporalAddress}, Default: "localhost:" + strconv.Itoa(DefaultTemporalPort),
			Meaning: "Temporal frontend (cmd/server: set it to embed no Temporal)"},
		{Names: []string{EnvTemporalNamespace}, Default: runs.DefaultNamespace, Meaning: "Temporal namespace"},
		{Names: []string{EnvTemporalTLS}, Default: "unset (on with an API key)", Meaning: "on or off: force TLS to Temporal"},
		{Names: []string{EnvTemporalGzip}, Default: "off",
			Meaning: "on: gzip the gRPC requests to Temporal (the SDK's default; off saves CPU on small requests)",
			load:    func(l *loader) error { return l.onOff(EnvTemporalGzip, &l.cfg.TemporalGzip) }},
		{Names: []string{EnvTemporalAPIKey, "TEMPORAL_TLS_*"}, Default: "unset", Meaning: "credentials (see the Temporal SDK's envconfig)"},
		{Names: []string{EnvTemporalProfile, EnvTemporalConfigFile}, Default: "unset (a file in the default place is not read)",
			Meaning: "a TOML profile of the Temporal CLI (file default ~/.config/temporalio/temporal.toml)", load: (*loader).temporalClient},
	}
}

// Usage writes a command's help: summary, its flags, and the environment
// variables it reads (ServerVars or WorkerVars).
func Usage(w io.Writer, summary string, fs *flag.FlagSet, vars []Var) {
	fmt.Fprintf(w, "%s\n\nUsage: %s [flags]\n\nFlags:\n", summary, fs.Name())
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, "  -h\tprint this help\n\nEnvironment (all optional):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range vars {
		fmt.Fprintf(tw, "  %s\t%s\t(default: %s)\n", strings.Join(v.Names, ", "), v.Meaning, v.Default)
	}
	_ = tw.Flush()
}

// checkNames refuses a variable of environ (os.Environ's form) that starts
// with the prefix of a family of settings read together (OPENWOP_OAUTH_)
// and is none of Vars: a misspelt setting (OPENWOP_OAUTH_TENANT_CLAIMS)
// would otherwise be ignored.
func checkNames(environ []string) error {
	const prefix = "OPENWOP_OAUTH_"
	var known []string
	for _, v := range Vars() {
		for _, name := range v.Names {
			if strings.HasPrefix(name, prefix) {
				known = append(known, name)
			}
		}
	}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, prefix) && !slices.Contains(known, name) {
			return fmt.Errorf("%s: no such setting (the OAuth settings are %s)", name, strings.Join(known, ", "))
		}
	}
	return nil
}
