package config

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/openwop/temporal-mcp/runs"
)

// EnvVar documents one environment variable in a command's -h output.
type EnvVar struct {
	// Name is the variable, or several separated by commas.
	Name string
	// Default is what applies when it is unset.
	Default string
	// Meaning says what it sets.
	Meaning string
}

// WorkerEnv documents the variables both commands read: the worker's
// (logging, task queue, tools) and the Temporal connection.
func WorkerEnv() []EnvVar {
	return []EnvVar{
		{EnvTaskQueue, runs.DefaultTaskQueue, "task queue the tool workflows run on"},
		{EnvFixtures, "off", "on: also serve the conformance fixture tools"},
		{EnvDataDir, "./" + DefaultDataDir, "data directory (published reports; cmd/server: the embedded temporal.db)"},
		{EnvLogFormat, "console (json with a remote Temporal)", "json or console"},
		{EnvLogLevel, "info", "debug, info, warn or error"},
		{EnvMetricsAddr, "off", "host:port of the Prometheus endpoint GET /metrics (mount and Temporal SDK metrics)"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "unset (no tracing)", "OTLP endpoint: export traces (OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or grpc, OTEL_SERVICE_NAME, other OTEL_* variables as the OpenTelemetry SDK reads them)"},
		{EnvTemporalAddress, "localhost:" + strconv.Itoa(DefaultTemporalPort), "Temporal frontend (cmd/server: set it to embed no Temporal)"},
		{EnvTemporalNamespace, runs.DefaultNamespace, "Temporal namespace"},
		{EnvTemporalTLS, "unset (on with an API key)", "on or off: force TLS to Temporal"},
		{EnvTemporalGzip, "off", "on: gzip the gRPC requests to Temporal (the SDK's default; off saves CPU on small requests)"},
		{"TEMPORAL_API_KEY, TEMPORAL_TLS_*", "unset", "credentials (see the Temporal SDK's envconfig)"},
		{EnvTemporalProfile + ", " + EnvTemporalConfigFile, "unset (a file in the default place is not read)", "a TOML profile of the Temporal CLI (file default ~/.config/temporalio/temporal.toml)"},
	}
}

// Usage writes a command's help: summary, its flags, and the environment
// variables it reads.
func Usage(w io.Writer, summary string, fs *flag.FlagSet, vars []EnvVar) {
	fmt.Fprintf(w, "%s\n\nUsage: %s [flags]\n\nFlags:\n", summary, fs.Name())
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, "  -h\tprint this help\n\nEnvironment (all optional):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range vars {
		fmt.Fprintf(tw, "  %s\t%s\t(default: %s)\n", v.Name, v.Meaning, v.Default)
	}
	_ = tw.Flush()
}
