package config

import (
	"cmp"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/contrib/envconfig"
	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/upstream"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// LoadConfig reads the configuration of cmd/worker from env
// (envconfig.EnvLookupOS for the process environment): every variable of
// Vars but the ServerOnly ones. A malformed value is an error naming the
// variable.
//
// The Temporal client options are the SDK's envconfig ones, loaded the
// same way for cmd/server and cmd/worker: the TEMPORAL_* variables and, only
// when TEMPORAL_CONFIG_FILE or TEMPORAL_PROFILE is set, a profile of the
// Temporal CLI's TOML file (TEMPORAL_CONFIG_FILE, default
// ~/.config/temporalio/temporal.toml). A file in its default place is
// otherwise ignored, so that with no TEMPORAL_* variable cmd/worker dials
// the server cmd/server embeds. Switches (TEMPORAL_TLS, ...) take on/off,
// true/false, yes/no or 1/0.
func LoadConfig(env envconfig.EnvLookup) (Config, error) {
	l := newLoader(env, false)
	if err := l.load(func(v Var) bool { return v.Scope != ServerOnly }); err != nil {
		return Config{}, err
	}
	return *l.cfg, nil
}

// LoadServer reads the configuration of cmd/server from env: LoadConfig's,
// then the ServerOnly variables into Config.Server (an OPENWOP_OAUTH_
// variable that is none of them is refused). With stdio (-stdio), the
// HTTP listener, the embedded Temporal frontend and the Web UI take free
// ports unless their variable is set, the data directory is shared
// (Config.ShareDataDir), and the audit trail may not go to stdout.
func LoadServer(env envconfig.EnvLookup, stdio bool) (Config, error) {
	l := newLoader(env, stdio)
	if err := l.load(func(v Var) bool { return v.Scope != ServerOnly }); err != nil {
		return Config{}, err
	}
	if err := checkNames(env.Environ()); err != nil {
		return Config{}, err
	}
	if err := l.load(func(v Var) bool { return v.Scope == ServerOnly }); err != nil {
		return Config{}, err
	}
	l.cfg.ShareDataDir = stdio
	return *l.cfg, nil
}

// loader reads the variables of Vars into a Config.
type loader struct {
	env   envconfig.EnvLookup
	cfg   *Config
	stdio bool
}

// newLoader returns a loader of env whose Config holds the defaults that
// the variables' loads do not set themselves.
func newLoader(env envconfig.EnvLookup, stdio bool) *loader {
	l := &loader{env: env, stdio: stdio, cfg: &Config{
		Worker:           true,
		LogLevel:         zapcore.InfoLevel,
		UI:               true,
		TemporalLogLevel: zapcore.WarnLevel,
		Server:           ServerConfig{StdioCaller: auth.Anonymous(), CompanionTools: true, RunListTool: true},
	}}
	l.cfg.Remote = l.get(EnvTemporalAddress) != "" || l.get(EnvTemporalProfile) != "" || l.get(EnvTemporalConfigFile) != ""
	return l
}

// load runs the loads of the Vars that pick, in the table's order.
func (l *loader) load(pick func(Var) bool) error {
	for _, v := range Vars() {
		if v.load == nil || !pick(v) {
			continue
		}
		if err := v.load(l); err != nil {
			return err
		}
	}
	return nil
}

// raw is the value of the variable name as set ("" when unset).
func (l *loader) raw(name string) string {
	v, _ := l.env.LookupEnv(name)
	return v
}

// get is the value of the variable name without surrounding space.
func (l *loader) get(name string) string { return strings.TrimSpace(l.raw(name)) }

// onOff reads the switch name into dst (left as it is when unset).
func (l *loader) onOff(name string, dst *bool) error {
	v := l.get(name)
	if v == "" {
		return nil
	}
	on, err := parseSwitch(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	*dst = on
	return nil
}

// hostPort checks a host:port value of the variable name.
func hostPort(name, v, also string) error {
	if _, _, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("%s=%q: want host:port%s: %w", name, v, also, err)
	}
	return nil
}

// httpAddr reads EnvHTTPAddr (with stdio, unset is a free port).
func (l *loader) httpAddr() error {
	v := l.get(EnvHTTPAddr)
	switch {
	case v == "" && l.stdio:
		l.cfg.HTTPAddr = "127.0.0.1:0"
	case v == "":
		l.cfg.HTTPAddr = DefaultHTTPAddr
	default:
		if err := hostPort(EnvHTTPAddr, v, ""); err != nil {
			return err
		}
		l.cfg.HTTPAddr = v
	}
	return nil
}

// taskQueue reads EnvTaskQueue.
func (l *loader) taskQueue() error {
	l.cfg.TaskQueue = runs.DefaultTaskQueue
	if v := l.get(EnvTaskQueue); v != "" {
		l.cfg.TaskQueue = v
	}
	return nil
}

// maxVersionField is the longest deployment name or build id Temporal
// accepts with its default ID length limit (limit.maxIDLength 1000: each
// may take half of what the version's internal workflow ID leaves).
const maxVersionField = 480

// deployment reads EnvDeploymentName and EnvBuildID: both or neither, and
// each as Temporal accepts it, so that a value it would refuse stops the
// process before it starts, naming the variable.
func (l *loader) deployment() error {
	name, build := strings.TrimSpace(l.get(EnvDeploymentName)), strings.TrimSpace(l.get(EnvBuildID))
	l.cfg.DeploymentName, l.cfg.BuildID = name, build
	if (name == "") != (build == "") {
		return fmt.Errorf("%s and %s: set both for a versioned worker, or neither", EnvDeploymentName, EnvBuildID)
	}
	if strings.ContainsAny(name, ".:") {
		return fmt.Errorf("%s=%q: a deployment name has no \".\" and no \":\"", EnvDeploymentName, name)
	}
	for _, v := range []struct{ env, value string }{{EnvDeploymentName, name}, {EnvBuildID, build}} {
		switch {
		case strings.HasPrefix(v.value, "__"):
			return fmt.Errorf("%s=%q: Temporal reserves values that start with \"__\"", v.env, v.value)
		case len(v.value) > maxVersionField:
			return fmt.Errorf("%s: %d bytes, longer than the %d Temporal accepts", v.env, len(v.value), maxVersionField)
		}
	}
	return nil
}

// logFormat reads EnvLogFormat (default LogJSON with a remote Temporal,
// LogConsole otherwise).
func (l *loader) logFormat() error {
	l.cfg.LogFormat = LogConsole
	if l.cfg.Remote {
		l.cfg.LogFormat = LogJSON
	}
	if v := strings.ToLower(l.get(EnvLogFormat)); v != "" {
		if v != LogJSON && v != LogConsole {
			return fmt.Errorf("%s=%q: want %s or %s", EnvLogFormat, v, LogJSON, LogConsole)
		}
		l.cfg.LogFormat = v
	}
	return nil
}

// level reads the log level name into dst (left as it is when unset).
func (l *loader) level(name string, dst *zapcore.Level) error {
	v := l.get(name)
	if v == "" {
		return nil
	}
	lv, err := zapcore.ParseLevel(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	*dst = lv
	return nil
}

// logLevel reads EnvLogLevel.
func (l *loader) logLevel() error { return l.level(EnvLogLevel, &l.cfg.LogLevel) }

// temporalLogLevel reads EnvTemporalLogLevel.
func (l *loader) temporalLogLevel() error {
	return l.level(EnvTemporalLogLevel, &l.cfg.TemporalLogLevel)
}

// dataDir reads EnvDataDir.
func (l *loader) dataDir() error {
	l.cfg.DataDir = DefaultDataDir
	if v := l.get(EnvDataDir); v != "" {
		l.cfg.DataDir = v
	}
	return nil
}

// temporalPort reads EnvTemporalPort (with stdio, unset is a free port).
func (l *loader) temporalPort() error {
	l.cfg.TemporalPort = DefaultTemporalPort
	v := l.get(EnvTemporalPort)
	if v == "" {
		if l.stdio {
			l.cfg.TemporalPort = 0
		}
		return nil
	}
	p, err := parsePort(v)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvTemporalPort, err)
	}
	l.cfg.TemporalPort = p
	return nil
}

// uiPort reads EnvUIPort: a port, or off (with stdio, unset is a free
// port).
func (l *loader) uiPort() error {
	l.cfg.UIPort = DefaultUIPort
	v := l.get(EnvUIPort)
	switch {
	case v == "" && l.stdio:
		l.cfg.UIPort = 0
	case v == "":
	case strings.EqualFold(v, "off"):
		l.cfg.UI, l.cfg.UIPort = false, 0
	default:
		p, err := parsePort(v)
		if err != nil {
			return fmt.Errorf("%s: %w; or off for no UI", EnvUIPort, err)
		}
		l.cfg.UIPort = p
	}
	return nil
}

// metricsAddr reads EnvMetricsAddr: host:port, or off.
func (l *loader) metricsAddr() error {
	if v := l.get(EnvMetricsAddr); v != "" && !strings.EqualFold(v, "off") {
		if err := hostPort(EnvMetricsAddr, v, ", or off"); err != nil {
			return err
		}
		l.cfg.MetricsAddr = v
	}
	return nil
}

// timeout reads the positive duration name into dst (def when unset).
func (l *loader) timeout(name string, dst *time.Duration, def time.Duration) error {
	d, err := parseTimeout(l.get(name), def)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	*dst = d
	return nil
}

// limit reads the bound of calls name into dst (def when unset).
func (l *loader) limit(name string, dst *int, def int) error {
	*dst = def
	v := l.get(name)
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1_000_000 {
		return fmt.Errorf("%s: %q: want a number of calls from 1 to 1000000", name, v)
	}
	*dst = n
	return nil
}

// parseResultLimit reads a value of EnvResultLimit ("" when unset): a
// number of bytes, at least 1000 (a page of a result must carry
// something), or 0 for none, which the mount takes as -1.
func parseResultLimit(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil || n < 0 || n > 0 && n < 1000 || n > 100_000_000:
		return 0, fmt.Errorf("%s: %q: want a number of bytes from 1000 to 100000000, or 0 for no limit", EnvResultLimit, v)
	case n == 0:
		return -1, nil
	}
	return n, nil
}

// temporalClient checks the Temporal connection's files and switches and
// loads the client options with the SDK's envconfig.
func (l *loader) temporalClient() error {
	tenv, err := newTemporalEnv(l.env)
	if err != nil {
		return fmt.Errorf("temporal client configuration: %w", err)
	}
	explicitFile := l.get(EnvTemporalConfigFile) != "" || l.get(EnvTemporalProfile) != ""
	l.cfg.Client, err = envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{EnvLookup: tenv, DisableFile: !explicitFile})
	if err != nil {
		return fmt.Errorf("temporal client configuration (%s=%q, %s=%q and the other TEMPORAL_* variables): %w",
			EnvTemporalConfigFile, l.get(EnvTemporalConfigFile), EnvTemporalProfile, l.get(EnvTemporalProfile), err)
	}
	return nil
}

// upstreamsFile reads EnvUpstreamsFile and checks the upstreams of the
// file it names; the variables its headers name are read from the
// environment.
func (l *loader) upstreamsFile() error {
	path := l.raw(EnvUpstreamsFile)
	if path == "" {
		return nil
	}
	f, err := upstream.Load(path, l.env.LookupEnv)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvUpstreamsFile, err)
	}
	l.cfg.UpstreamsFile, l.cfg.Upstreams = path, f
	return nil
}

// toolsFile reads EnvToolsFile and the declarations of the file it names.
func (l *loader) toolsFile() error {
	path := l.raw(EnvToolsFile)
	if path == "" {
		return nil
	}
	declared, err := catalog.LoadDeclarations(path)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvToolsFile, err)
	}
	l.cfg.Server.ToolsFile, l.cfg.Server.Declared = path, declared
	return nil
}

// apiKeys reads EnvAPIKeys and the keys of the file EnvAPIKeysFile names,
// merged. With neither set the key set is the development one (no keys).
func (l *loader) apiKeys() error {
	keys, err := auth.ParseKeys(l.raw(EnvAPIKeys))
	if err != nil {
		return fmt.Errorf("%s: %w", EnvAPIKeys, err)
	}
	if path := l.raw(EnvAPIKeysFile); path != "" {
		fk, err := auth.LoadFile(path)
		if err != nil {
			return fmt.Errorf("%s: %w", EnvAPIKeysFile, err)
		}
		keys = append(keys, fk...)
	}
	l.cfg.Server.Keys, err = auth.New(keys)
	return err
}

// auditLog reads EnvAuditLog (with stdio, not stdout: stdout is the MCP
// stream).
func (l *loader) auditLog() error {
	sink := cmp.Or(l.get(EnvAuditLog), DefaultAuditLog)
	if l.stdio && sink == audit.SinkStdout {
		return fmt.Errorf("%s: stdout is the MCP stream of -stdio; use stderr or a file", EnvAuditLog)
	}
	l.cfg.Server.AuditLog = sink
	return nil
}

// mrtrKey reads EnvMRTRKey (at least MinMRTRKey bytes).
func (l *loader) mrtrKey() error {
	k := l.raw(EnvMRTRKey)
	if k == "" {
		return nil
	}
	if len(k) < MinMRTRKey {
		return fmt.Errorf("%s: the key is %d bytes; want at least %d", EnvMRTRKey, len(k), MinMRTRKey)
	}
	l.cfg.Server.MRTRKey = []byte(k)
	return nil
}

// stdioCaller reads the caller of -stdio: with EnvStdioTenant set, a user
// of that tenant whose subject is EnvStdioSubject (urn:openwop:stdio when
// unset); the anonymous local caller otherwise.
func (l *loader) stdioCaller() error {
	t, subject := l.raw(EnvStdioTenant), l.raw(EnvStdioSubject)
	if t == "" {
		return nil
	}
	c := signals.Subject{Issuer: "urn:openwop:stdio", Tenant: t, SubjectID: subject, Kind: "user"}
	c.SubjectID = cmp.Or(c.SubjectID, "urn:openwop:stdio")
	l.cfg.Server.StdioCaller = c
	return nil
}

// loadNexusTenants parses EnvNexusTenants's value v: namespace=tenant,...
// (nil when v is empty).
func loadNexusTenants(v string) (map[string]string, error) {
	if v == "" {
		return nil, nil
	}
	tenants := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		ns, tenant, ok := strings.Cut(strings.TrimSpace(pair), "=")
		ns, tenant = strings.TrimSpace(ns), strings.TrimSpace(tenant)
		switch {
		case !ok || ns == "" || tenant == "":
			return nil, fmt.Errorf("%s: %q is not namespace=tenant", EnvNexusTenants, pair)
		case tenants[ns] != "":
			return nil, fmt.Errorf("%s: namespace %q is mapped twice", EnvNexusTenants, ns)
		}
		tenants[ns] = tenant
	}
	return tenants, nil
}

// oauth reads the OAuth settings (loadOAuth).
func (l *loader) oauth() error {
	o, err := loadOAuth(l.get, l.cfg.PublicURL)
	if err != nil {
		return err
	}
	l.cfg.Server.OAuth = o
	return nil
}
