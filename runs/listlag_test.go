package runs_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// BenchmarkListLag measures how far a list (visibility) lags a run's own
// read (its history): each iteration starts a run that ends at once, awaits
// its end through Await, then lists until the list shows it completed. It
// reports the lag's median and maximum (lag-p50-ms, lag-max-ms); ns/op is
// the whole cycle. Run it on each persistence:
//
//	go test -run '^$' -bench ListLag -benchtime 50x ./runs
//	OPENWOP_TEST_PERSISTENCE=postgres go test -run '^$' -bench ListLag -benchtime 50x ./runs
func BenchmarkListLag(b *testing.B) {
	s, _ := setup(b)
	ctx := ctxT(b)
	tenant := signals.Subject{SubjectID: "urn:test:lag", Tenant: fmt.Sprintf("lag%d", time.Now().UnixNano())}
	var lags []time.Duration
	for b.Loop() {
		id := start(b, s, "conformance-delay", `{"delayMs":0}`, tenant).RunID
		if _, err := s.Await(ctx, tenant, id, terminal); err != nil {
			b.Fatal(err)
		}
		ended := time.Now()
		for !listedCompleted(b, s, tenant, id) {
			if time.Since(ended) > time.Minute {
				b.Fatalf("run %s not listed completed after a minute", id)
			}
			time.Sleep(time.Millisecond)
		}
		lags = append(lags, time.Since(ended))
	}
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "lag-p50-ms")
	b.ReportMetric(float64(lags[len(lags)-1].Microseconds())/1000, "lag-max-ms")
}

// listedCompleted reports whether the newest run the tenant lists is id,
// completed.
func listedCompleted(b *testing.B, s *runs.Service, tenant signals.Subject, id string) bool {
	page, err := s.List(ctxT(b), tenant, runs.ListRequest{Limit: 1, Status: signals.StatusCompleted})
	if err != nil {
		b.Fatal(err)
	}
	return len(page.Runs) == 1 && page.Runs[0].RunID == id
}
