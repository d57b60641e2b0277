package export

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// TestOffCostsNothing: with no OTEL_* variable and metrics off, New
// builds nothing and adds nothing to the Temporal client.
func TestOffCostsNothing(t *testing.T) {
	tel, err := New(context.Background(), Options{ServiceName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if tel.TracerProvider() != nil || tel.Metrics() != nil {
		t.Fatalf("tracing %v, metrics %v: want both off", tel.TracerProvider(), tel.Metrics())
	}
	var o client.Options
	if err := tel.ClientOptions(&o); err != nil || len(o.Interceptors) != 0 || o.MetricsHandler != nil {
		t.Fatalf("client options changed: %+v, %v", o, err)
	}
}

// TestAdmissionRejectionsScraped: the admission control's counter (which
// the mount does not drive itself) reaches the endpoint by reason.
func TestAdmissionRejectionsScraped(t *testing.T) {
	tel, err := New(context.Background(), Options{ServiceName: "test", Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	m := tel.Metrics()
	m.AdmissionRejected("rate")
	m.AdmissionRejected("rate")
	m.AdmissionRejected("concurrency")
	srv, err := ServeMetrics(context.Background(), "127.0.0.1:0", m, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Shutdown(context.Background()) }()
	resp, err := http.Get("http://" + srv.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		MetricAdmissionRejects + `{reason="rate"} 2`,
		MetricAdmissionRejects + `{reason="concurrency"} 1`,
		"go_goroutines ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if resp, err := http.Post("http://"+srv.Addr()+"/metrics", "text/plain", nil); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST /metrics = %d, want 405", resp.StatusCode)
		}
	}
}

// TestOTLPExport: with tracing on and OTEL_EXPORTER_OTLP_ENDPOINT set
// (which the OTLP exporter reads), spans reach that endpoint over
// OTLP/HTTP (flushed at Shutdown), with the service name of
// OTEL_SERVICE_NAME (which the SDK reads).
func TestOTLPExport(t *testing.T) {
	got := make(chan []byte, 4)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			got <- body
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_SERVICE_NAME", "otlp-test-service")
	tel, err := New(context.Background(), Options{ServiceName: "default-name", Tracing: TracingConfig{Enabled: true, Protocol: ProtocolHTTP}})
	if err != nil {
		t.Fatal(err)
	}
	tp := tel.TracerProvider()
	if tp == nil {
		t.Fatal("tracing is off with an endpoint set")
	}
	_, span := tp.Tracer("test").Start(context.Background(), "exported-span")
	span.End()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case body := <-got:
		for _, want := range []string{"exported-span", "otlp-test-service"} {
			if !bytes.Contains(body, []byte(want)) {
				t.Errorf("export lacks %q", want)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OTLP export reached the endpoint")
	}
}
