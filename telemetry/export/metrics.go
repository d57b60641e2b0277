package export

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.uber.org/zap"
)

// Metric names of the mount (Prometheus).
const (
	// MetricRequests counts answered MCP requests by method and outcome.
	MetricRequests = "openwop_mcp_requests_total"
	// MetricRequestDuration is the latency histogram of MCP requests by
	// method and outcome.
	MetricRequestDuration = "openwop_mcp_request_duration_seconds"
	// MetricBlockingCalls is the number of task-less calls waiting now.
	MetricBlockingCalls = "openwop_mcp_blocking_calls"
	// MetricSSEStreams is the number of SSE response streams open now.
	MetricSSEStreams = "openwop_mcp_sse_streams"
	// MetricOwnershipCancels counts runs cancelled because their owning
	// request went away.
	MetricOwnershipCancels = "openwop_mcp_ownership_cancellations_total"
	// MetricMRTRRounds counts InputRequiredResults sent.
	MetricMRTRRounds = "openwop_mcp_mrtr_rounds_total"
	// MetricAdmissionRejects counts requests admission control refused,
	// by reason.
	MetricAdmissionRejects = "openwop_admission_rejections_total"
)

// Metrics records the adapter's metrics in a Prometheus registry of its
// own. It implements mcpmount.Recorder. It is safe for concurrent use.
type Metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	blocking   prometheus.Gauge
	sse        prometheus.Gauge
	ownership  prometheus.Counter
	mrtr       prometheus.Counter
	admission  *prometheus.CounterVec
	meters     *sdkmetric.MeterProvider
	sdkHandler client.MetricsHandler
}

// MetricsOptions configure NewMetrics.
type MetricsOptions struct {
	// Logger receives the errors of the Temporal SDK metrics bridge (nil:
	// none).
	Logger *zap.Logger
	// Buckets are the request latency histogram's buckets in seconds
	// (nil: prometheus.DefBuckets extended to 5 minutes, the longest
	// blocking call by default).
	Buckets []float64
}

// gauge returns a new gauge named name.
func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// counter returns a new counter named name.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// NewMetrics returns a recorder on a new registry that also holds the Go
// runtime and process collectors and the Temporal SDK's metrics (recorded
// through TemporalMetricsHandler).
func NewMetrics(opts MetricsOptions) (*Metrics, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Buckets == nil {
		opts.Buckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	}
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequests,
			Help: "MCP requests answered, by JSON-RPC method and outcome (ok, tool_error, input_required, task, error, cancelled, rejected).",
		}, []string{"method", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricRequestDuration,
			Help:    "Time from an MCP request's arrival to its answer, by method and outcome.",
			Buckets: opts.Buckets,
		}, []string{"method", "outcome"}),
		blocking: gauge(MetricBlockingCalls, "Task-less tools/call requests waiting for their run."),
		sse:      gauge(MetricSSEStreams, "Open SSE response streams."),
		ownership: counter(MetricOwnershipCancels,
			"Runs cancelled because the request that owned them went away before its response was sent (mcp-request-cancelled)."),
		mrtr: counter(MetricMRTRRounds, "InputRequiredResults sent (multi-round-trip input rounds of task-less calls)."),
		admission: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricAdmissionRejects,
			Help: "Requests refused by admission control, by reason.",
		}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{
		m.requests, m.duration, m.blocking, m.sse, m.ownership, m.mrtr, m.admission,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("temporal SDK metrics exporter: %w", err)
	}
	m.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	log := opts.Logger
	m.sdkHandler = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                m.meters.Meter("temporal-sdk-go"),
		UseMonotonicCounters: true,
		OnError:              func(err error) { log.Warn("temporal SDK metric", zap.Error(err)) },
	})
	return m, nil
}

// Registry is the registry the metrics are in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// TemporalMetricsHandler records the Temporal SDK's metrics (client and
// worker) in the registry: set it as client.Options.MetricsHandler.
func (m *Metrics) TemporalMetricsHandler() client.MetricsHandler { return m.sdkHandler }

// Request records one answered MCP request.
func (m *Metrics) Request(method, outcome string, d time.Duration) {
	m.requests.WithLabelValues(method, outcome).Inc()
	m.duration.WithLabelValues(method, outcome).Observe(d.Seconds())
}

// BlockingCall records a task-less call that starts (+1) or stops (-1)
// waiting for its run.
func (m *Metrics) BlockingCall(delta int) { m.blocking.Add(float64(delta)) }

// SSEStream records an SSE response stream that opens (+1) or closes (-1).
func (m *Metrics) SSEStream(delta int) { m.sse.Add(float64(delta)) }

// OwnershipCancelled records a run cancelled because its owning request
// went away.
func (m *Metrics) OwnershipCancelled() { m.ownership.Inc() }

// MRTRRound records an InputRequiredResult sent.
func (m *Metrics) MRTRRound() { m.mrtr.Inc() }

// AdmissionRejected records a request admission control refused, with a
// short, fixed reason (e.g. "rate", "concurrency"; not a caller's input,
// which would make the label unbounded).
func (m *Metrics) AdmissionRejected(reason string) { m.admission.WithLabelValues(reason).Inc() }
