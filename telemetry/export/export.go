package export

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/telemetry"
)

// Options configure New.
type Options struct {
	// ServiceName is the service.name of exported spans unless
	// OTEL_SERVICE_NAME says otherwise.
	ServiceName string
	// Tracing says whether and how spans are exported
	// (NewTracerProvider). The zero value: tracing off.
	Tracing TracingConfig
	// Metrics turns the Prometheus recorder on.
	Metrics bool
	// Logger receives telemetry's own errors (nil: none).
	Logger *zap.Logger
}

// Telemetry is a process's tracing and metrics, each possibly off.
type Telemetry struct {
	tp      *sdktrace.TracerProvider // nil: tracing off
	metrics *Metrics                 // nil: metrics off
}

// New sets up tracing (NewTracerProvider: on only when opts.Tracing asks
// for export) and, with opts.Metrics, the Prometheus
// recorder (NewMetrics).
func New(ctx context.Context, opts Options) (*Telemetry, error) {
	t := &Telemetry{}
	tp, err := NewTracerProvider(ctx, opts.ServiceName, opts.Tracing)
	if err != nil {
		return nil, err
	}
	t.tp = tp
	if opts.Metrics {
		if t.metrics, err = NewMetrics(MetricsOptions{Logger: opts.Logger}); err != nil {
			return nil, errors.Join(err, t.Shutdown(ctx))
		}
	}
	return t, nil
}

// TracerProvider is the tracer provider, nil when tracing is off (an
// untyped nil, so that `!= nil` tells).
func (t *Telemetry) TracerProvider() trace.TracerProvider {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp
}

// Metrics is the recorder, nil when metrics are off. (Give it to
// mcpmount.Options.Metrics only when it is not nil: a nil *Metrics in an
// interface is not a nil interface.)
func (t *Telemetry) Metrics() *Metrics {
	if t == nil {
		return nil
	}
	return t.metrics
}

// ClientOptions adds to Temporal client options the tracing interceptor
// (when tracing is on) and the SDK metrics handler (when metrics are on).
// Workers built on the client inherit both.
func (t *Telemetry) ClientOptions(o *client.Options) error {
	if t == nil {
		return nil
	}
	if t.tp != nil {
		i, err := telemetry.TemporalInterceptor(t.tp)
		if err != nil {
			return err
		}
		o.Interceptors = append(o.Interceptors, i)
	}
	if t.metrics != nil {
		o.MetricsHandler = t.metrics.TemporalMetricsHandler()
	}
	return nil
}

// Shutdown flushes and stops the span exporter.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("trace exporter shutdown: %w", err)
	}
	return nil
}

// MetricsServer serves GET /metrics on a listener of its own.
type MetricsServer struct {
	srv  *http.Server
	addr string
}

// metricsReadTimeout bounds a scrape request's arrival.
const metricsReadTimeout = 10 * time.Second

// ServeMetrics starts serving m at /metrics on addr (host:port; port 0
// picks one). Errors after the start are logged.
func ServeMetrics(ctx context.Context, addr string, m *Metrics, logger *zap.Logger) (*MetricsServer, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	s := &MetricsServer{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: metricsReadTimeout, ReadTimeout: metricsReadTimeout,
			ErrorLog: zap.NewStdLog(logger)},
		addr: l.Addr().String(),
	}
	go func() {
		if err := s.srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener failed", zap.Error(err))
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *MetricsServer) Addr() string { return s.addr }

// Shutdown stops the server.
func (s *MetricsServer) Shutdown(ctx context.Context) error {
	if s == nil {
		return nil
	}
	return s.srv.Shutdown(ctx)
}

// With is a Telemetry of a tracer provider and a recorder the caller
// built (either nil for off): an embedding program's own, or a test's
// in-memory exporter.
func With(tp *sdktrace.TracerProvider, m *Metrics) *Telemetry {
	return &Telemetry{tp: tp, metrics: m}
}
