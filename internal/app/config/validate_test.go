package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/telemetry/export"
)

// TestInvalidSettingsNameTheVariable: every invalid value is refused with
// an error that names its variable.
func TestInvalidSettingsNameTheVariable(t *testing.T) {
	tests := []struct {
		variable, value string
	}{
		{EnvHTTPAddr, "8080"},
		{EnvWorker, "maybe"},
		{EnvFixtures, "2"},
		{EnvUpstreamsFile, "/nonexistent/upstreams.json"},
		{EnvLogFormat, "xml"},
		{EnvLogLevel, "loud"},
		{EnvTemporalLogLevel, "chatty"},
		{EnvTemporalPort, "70000"},
		{EnvTemporalPort, "-1"},
		{EnvUIPort, "ui"},
		{EnvUIPort, "-1"},
		{EnvUIPort, "65536"},
		{EnvPublicURL, "wop.example.com"},
		{EnvPublicURL, "ftp://wop.example.com"},
		{EnvPublicURL, "https://"},
		{EnvPublicURL, "https://user:pw@wop.example.com"},
		{EnvPublicURL, "https://wop.example.com/?x=1"},
		{EnvPublicURL, "https://wop.example.com/#top"},
		{EnvPublicURL, "://"},
		{EnvAllowedHosts, "https://wop.example.com"},
		{EnvAllowedHosts, "wop.example.com/path"},
		{EnvAllowedHosts, "wop.example.com:99999"},
		{EnvAllowedHosts, ":8080"},
		{EnvAllowedHosts, "good.example, bad host"},
		{EnvAllowedOrigins, "app.example.com"},
		{EnvAllowedOrigins, "https://app.example.com/path"},
		{EnvAllowedOrigins, "ftp://app.example.com"},
		{EnvAllowedOrigins, "null"},
		{EnvHTTPReadTimeout, "20"},
		{EnvHTTPReadTimeout, "0s"},
		{EnvHTTPReadTimeout, "-5s"},
		{EnvHTTPReadTimeout, "soon"},
		{EnvHTTPIdleTimeout, "1 minute"},
		{EnvHTTPMaxConns, "0"},
		{EnvHTTPMaxConns, "-1"},
		{EnvHTTPMaxConns, "lots"},
		{EnvHTTPMaxConns, "18446744074"},
		{EnvMaxStarts, "0"},
		{EnvMaxStarts, "many"},
		{EnvMaxBlockingCalls, "-3"},
		{EnvMaxBlockingCalls, "18446744074"},
		{EnvTenantMaxCalls, "1.5"},
		{EnvTemporalTLS, "maybe"},
		{EnvTemporalTLS, "2"},
		{EnvTemporalTLSNoVerify, "sometimes"},
		{EnvTemporalConfigFile, "/nonexistent/temporal.toml"},
		{"TEMPORAL_TLS_CLIENT_CERT_PATH", "/nonexistent/client.pem"},
		{"TEMPORAL_TLS_CLIENT_KEY_PATH", "/nonexistent/client.key"},
		{"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "/nonexistent/ca.pem"},
		{EnvMetricsAddr, "9090"},
		{EnvMetricsAddr, "on"},
		{EnvOTelTracesExporter, "jaeger"},
		{EnvOTelSDKDisabled, "maybe"},
		{EnvOTelProtocol, "http/json"},
		{EnvOTelTracesProtocol, "udp"},
		{EnvDeploymentName, "refunds"},
		{EnvBuildID, "v1"},
	}
	for _, tt := range tests {
		t.Run(tt.variable+"="+tt.value, func(t *testing.T) {
			_, err := LoadConfig(mapEnv{tt.variable: tt.value})
			if err == nil || !strings.Contains(err.Error(), tt.variable) {
				t.Fatalf("LoadConfig(%s=%q) = %v, want an error naming %s", tt.variable, tt.value, err, tt.variable)
			}
			if strings.Count(err.Error(), "\n") != 0 {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
	t.Run("upstreams file with a bad entry", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "upstreams.json")
		if err := os.WriteFile(path, []byte(`{"upstreams":[{"name":"search","url":"https://h/mcp","headerEnv":{"Authorization":"SEARCH_AUTH"}}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(mapEnv{EnvUpstreamsFile: path})
		if err == nil || !strings.Contains(err.Error(), EnvUpstreamsFile) || !strings.Contains(err.Error(), `upstream 0 ("search"): headerEnv`) {
			t.Fatalf("err = %v, want one naming %s and the entry", err, EnvUpstreamsFile)
		}
		cfg, err := LoadConfig(mapEnv{EnvUpstreamsFile: path, "SEARCH_AUTH": "Bearer x"})
		if err != nil || cfg.UpstreamsFile != path || len(cfg.Upstreams.Upstreams) != 1 {
			t.Fatalf("LoadConfig with the header's variable set = %+v, %v; want the file's one upstream", cfg.Upstreams, err)
		}
	})
	t.Run("unknown profile", func(t *testing.T) {
		_, err := LoadConfig(mapEnv{EnvTemporalConfigFile: "/dev/null", EnvTemporalProfile: "nope"})
		if err == nil || !strings.Contains(err.Error(), EnvTemporalProfile) || !strings.Contains(err.Error(), "nope") {
			t.Fatalf("err = %v, want one naming %s", err, EnvTemporalProfile)
		}
	})
}

// TestTemporalTLSSwitch: TEMPORAL_TLS takes on/off (and the other switch
// spellings) as docs/configuration.md says; envconfig alone ignores "on".
func TestTemporalTLSSwitch(t *testing.T) {
	tests := []struct {
		value   string
		apiKey  bool
		wantTLS bool
	}{
		{"on", false, true}, {"ON", false, true}, {"yes", false, true}, {"true", false, true}, {"1", false, true},
		{"off", true, false}, {"no", true, false}, {"false", true, false}, {"0", true, false},
		{"", true, true}, // unset: TLS with an API key
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			env := mapEnv{EnvTemporalAddress: "temporal.example:7233", EnvTemporalTLS: tt.value}
			if tt.apiKey {
				env["TEMPORAL_API_KEY"] = "secret"
			}
			c, err := LoadConfig(env)
			if err != nil {
				t.Fatal(err)
			}
			gotTLS := c.Client.ConnectionOptions.TLS != nil && !c.Client.ConnectionOptions.TLSDisabled
			if gotTLS != tt.wantTLS {
				t.Fatalf("TLS = %v (options %+v), want %v", gotTLS, c.Client.ConnectionOptions, tt.wantTLS)
			}
		})
	}
	c, err := LoadConfig(mapEnv{EnvTemporalAddress: "t:7233", EnvTemporalTLS: "on", EnvTemporalTLSNoVerify: "on"})
	if err != nil || c.Client.ConnectionOptions.TLS == nil || !c.Client.ConnectionOptions.TLS.InsecureSkipVerify {
		t.Fatalf("TEMPORAL_TLS_DISABLE_HOST_VERIFICATION=on: %v %+v", err, c.Client.ConnectionOptions.TLS)
	}
}

// TestUIPortValues: 0 is any free port, off no UI, as documented.
func TestUIPortValues(t *testing.T) {
	tests := []struct {
		value  string
		ui     bool
		port   int
		remark string
	}{
		{"", true, DefaultUIPort, "default"},
		{"0", true, 0, "any free port"},
		{"9233", true, 9233, "a port"},
		{"off", false, 0, "no UI"},
		{"OFF", false, 0, "no UI"},
	}
	for _, tt := range tests {
		t.Run(tt.remark+" "+tt.value, func(t *testing.T) {
			env := mapEnv{}
			if tt.value != "" {
				env[EnvUIPort] = tt.value
			}
			c, err := LoadConfig(env)
			if err != nil {
				t.Fatal(err)
			}
			if c.UI != tt.ui || c.UIPort != tt.port {
				t.Fatalf("UI=%v UIPort=%d, want %v %d", c.UI, c.UIPort, tt.ui, tt.port)
			}
		})
	}
}

// TestHTTPSettings: the public URL, the gate's lists and the connection
// limits, with their defaults.
func TestHTTPSettings(t *testing.T) {
	c, err := LoadConfig(mapEnv{})
	if err != nil {
		t.Fatal(err)
	}
	if c.PublicURL != "" || c.AllowedHosts != nil || c.AllowedOrigins != nil || c.HTTPReadTimeout != DefaultHTTPReadTimeout ||
		c.HTTPIdleTimeout != DefaultHTTPIdleTimeout || c.HTTPMaxConns != DefaultHTTPMaxConns {
		t.Fatalf("defaults = %+v", c)
	}
	if !reflect.DeepEqual(c.Admission, admission.Options{MaxStarts: admission.DefaultMaxStarts, MaxWaiting: admission.DefaultMaxWaiting,
		TenantMax: admission.DefaultTenantMax}) {
		t.Fatalf("admission defaults = %+v", c.Admission)
	}
	if admission.DefaultTenantMax < 200 || admission.DefaultTenantMax >= admission.DefaultMaxStarts {
		t.Fatalf("the default tenant share %d must admit 200 clients of one tenant and leave starts to others (%d)",
			admission.DefaultTenantMax, admission.DefaultMaxStarts)
	}
	if DefaultHTTPReadTimeout > 30*time.Second || DefaultHTTPIdleTimeout > 45*time.Second {
		t.Fatalf("defaults %v/%v do not close slow and idle connections soon", DefaultHTTPReadTimeout, DefaultHTTPIdleTimeout)
	}
	c, err = LoadConfig(mapEnv{
		EnvPublicURL:       "https://WOP.example.com/base/",
		EnvAllowedHosts:    " proxy.internal, Other.example:8443 ,",
		EnvAllowedOrigins:  "https://App.example.com/, http://localhost:5173",
		EnvHTTPReadTimeout: "5s", EnvHTTPIdleTimeout: "1m", EnvHTTPMaxConns: "64",
		EnvMaxStarts: "10", EnvMaxBlockingCalls: "20", EnvTenantMaxCalls: "5",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Admission, admission.Options{MaxStarts: 10, MaxWaiting: 20, TenantMax: 5}) {
		t.Fatalf("admission = %+v", c.Admission)
	}
	want := struct {
		public         string
		hosts, origins []string
		read, idle     time.Duration
		conns          int
	}{"https://wop.example.com/base", []string{"proxy.internal", "other.example:8443"},
		[]string{"https://app.example.com", "http://localhost:5173"}, 5 * time.Second, time.Minute, 64}
	got := want
	got.public, got.hosts, got.origins = c.PublicURL, c.AllowedHosts, c.AllowedOrigins
	got.read, got.idle, got.conns = c.HTTPReadTimeout, c.HTTPIdleTimeout, c.HTTPMaxConns
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// TestClientConfigFileSameForBothCommands: a Temporal CLI file in its
// default place is read only when TEMPORAL_PROFILE or TEMPORAL_CONFIG_FILE
// asks for it, so cmd/server (embedding) and cmd/worker (dialing
// localhost:7233) agree when neither is set.
func TestClientConfigFileSameForBothCommands(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HOME", dir)
	file := filepath.Join(dir, "temporalio", "temporal.toml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	toml := "[profile.default]\naddress = \"elsewhere.example:7233\"\nnamespace = \"far\"\n" +
		"[profile.cloud]\naddress = \"cloud.example:7233\"\nnamespace = \"cloudy\"\n"
	if err := os.WriteFile(file, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		env       mapEnv
		remote    bool
		hostPort  string
		namespace string
	}{
		{"nothing set: the default file is ignored", mapEnv{}, false, "localhost:7233", "default"},
		{"TEMPORAL_NAMESPACE alone", mapEnv{EnvTemporalNamespace: "dev"}, false, "localhost:7233", "dev"},
		{"TEMPORAL_PROFILE reads the default file", mapEnv{EnvTemporalProfile: "cloud"}, true, "cloud.example:7233", "cloudy"},
		{"TEMPORAL_CONFIG_FILE reads its default profile", mapEnv{EnvTemporalConfigFile: file}, true, "elsewhere.example:7233", "far"},
		{"TEMPORAL_ADDRESS alone ignores the file", mapEnv{EnvTemporalAddress: "mine:7233"}, true, "mine:7233", "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Remote != tt.remote || c.HostPort() != tt.hostPort || c.Namespace() != tt.namespace {
				t.Fatalf("Remote=%v HostPort=%q Namespace=%q, want %v %q %q", c.Remote, c.HostPort(), c.Namespace(), tt.remote, tt.hostPort, tt.namespace)
			}
		})
	}
}

// TestObservabilitySettings: the metrics endpoint is off unless
// OPENWOP_METRICS_ADDR names an address, and tracing is on only when the
// OTEL_* variables ask for an OTLP export.
func TestObservabilitySettings(t *testing.T) {
	tests := []struct {
		name     string
		env      mapEnv
		metrics  string
		tracing  bool
		protocol string
	}{
		{"nothing set", mapEnv{}, "", false, ""},
		{"metrics off", mapEnv{EnvMetricsAddr: "off"}, "", false, ""},
		{"metrics on", mapEnv{EnvMetricsAddr: "127.0.0.1:9464"}, "127.0.0.1:9464", false, ""},
		{"endpoint", mapEnv{EnvOTelEndpoint: "http://collector:4318"}, "", true, export.ProtocolHTTP},
		{"traces endpoint, grpc", mapEnv{EnvOTelTracesEndpoint: "collector:4317", EnvOTelProtocol: "grpc"}, "", true, export.ProtocolGRPC},
		{"traces protocol wins", mapEnv{EnvOTelEndpoint: "x:4317", EnvOTelProtocol: "http/protobuf", EnvOTelTracesProtocol: "grpc"}, "", true, export.ProtocolGRPC},
		{"exporter none", mapEnv{EnvOTelEndpoint: "http://collector:4318", EnvOTelTracesExporter: "none"}, "", false, ""},
		{"sdk disabled", mapEnv{EnvOTelEndpoint: "http://collector:4318", EnvOTelSDKDisabled: "true"}, "", false, ""},
		{"exporter otlp, default endpoint", mapEnv{EnvOTelTracesExporter: "otlp"}, "", true, export.ProtocolHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.MetricsAddr != tt.metrics || c.Tracing.Enabled != tt.tracing || (tt.tracing && c.Tracing.Protocol != tt.protocol) {
				t.Fatalf("metrics %q tracing %+v, want %q %v %s", c.MetricsAddr, c.Tracing, tt.metrics, tt.tracing, tt.protocol)
			}
		})
	}
}

// TestResultLimit: OPENWOP_RESULT_LIMIT sets the mount's result limit
// (cmd/server only); unset it is the mount's default (0), 0 turns it off
// (-1), and a value that is not a number of bytes from 1000 is refused
// naming the variable.
func TestResultLimit(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  int
	}{{"", 0}, {"0", -1}, {"1000", 1000}, {"200000", 200000}} {
		c, err := LoadServer(mapEnv{EnvResultLimit: tt.value}, false)
		if err != nil || c.Server.ResultLimit != tt.want {
			t.Errorf("%s=%q: limit %d, %v; want %d", EnvResultLimit, tt.value, c.Server.ResultLimit, err, tt.want)
		}
	}
	for _, bad := range []string{"999", "-1", "big"} {
		if _, err := LoadServer(mapEnv{EnvResultLimit: bad}, false); err == nil || !strings.Contains(err.Error(), EnvResultLimit) {
			t.Errorf("%s=%q: %v, want an error naming it", EnvResultLimit, bad, err)
		}
	}
}
