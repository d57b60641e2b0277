package export

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
)

func noEnv(string) (string, bool) { return "", false }

// TestOffCostsNothing: with no OTEL_* variable and metrics off, New
// builds nothing and adds nothing to the Temporal client.
func TestOffCostsNothing(t *testing.T) {
	tel, err := New(context.Background(), Options{ServiceName: "test", Env: noEnv})
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
	tel, err := New(context.Background(), Options{ServiceName: "test", Env: noEnv, Metrics: true})
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
