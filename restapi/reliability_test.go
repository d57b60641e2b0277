package restapi

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
)

// requestContexts wraps a handler so a test can wait until the server saw
// a request end (its client left).
type requestContexts chan context.Context

func (rc requestContexts) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/runs" {
			select {
			case rc <- r.Context():
			default:
			}
		}
		next.ServeHTTP(w, r)
	})
}

// TestIntegrationStartFailure injects POST /runs start calls that reach
// Temporal but answer the server an error (a timeout, a lost connection):
// a client still waiting gets 201 and the run; a client that left has its
// run cancelled with reason start-failed. Either way no run goes on that
// no client knows.
func TestIntegrationStartFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  codes.Code
		leave bool
	}{
		{"timeout, client waiting", codes.DeadlineExceeded, false},
		{"unavailable, client waiting", codes.Unavailable, false},
		{"timeout, client gone", codes.DeadlineExceeded, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults := &testenv.Faults{}
			contexts := make(requestContexts, 1)
			it := newIntegrationWith(t, itestOptions{faults: faults, wrap: contexts.wrap})
			ctx, leave := context.WithCancel(context.Background())
			defer leave()
			faults.FailStarts(func(string) (testenv.StartFault, bool) {
				return testenv.StartFault{Code: tc.code, Forward: true, After: func(string) {
					if tc.leave {
						leave()
						waitEnded(t, contexts)
					}
				}}, true
			})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, it.url+"/runs",
				strings.NewReader(`{"workflowId":"conformance-delay","inputs":{"delayMs":500}}`))
			req.Header.Set("Authorization", "Bearer "+keyA)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			failed := faults.Failed()
			if len(failed) != 1 {
				t.Fatalf("injected start failures: %v", failed)
			}
			id := failed[0]
			if tc.leave {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("the client left, yet got HTTP %d", resp.StatusCode)
				}
				events := it.waitTerminal(keyA, id, 20*time.Second)
				if p := payloadOf(t, events, signals.EventRunCancelled); p["reason"] != signals.ReasonStartFailed {
					t.Fatalf("run %s of a client that left: run.cancelled %v; want reason %s", id, p, signals.ReasonStartFailed)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || !strings.HasSuffix(resp.Header.Get("Location"), runPath(id)) {
				t.Fatalf("POST /runs with a failed start call: HTTP %d Location %q; want 201 and run %s",
					resp.StatusCode, resp.Header.Get("Location"), id)
			}
			it.waitTerminal(keyA, id, 20*time.Second)
			if snap := it.get(keyA, id); snap.body["status"] != string(signals.StatusCompleted) {
				t.Fatalf("run %s: %s", id, snap.raw)
			}
		})
	}
}

// waitEnded waits until the server saw the POST /runs request end.
func waitEnded(t *testing.T, contexts requestContexts) {
	select {
	case ctx := <-contexts:
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Second):
			t.Error("the server did not see the client leave")
		}
	case <-time.After(20 * time.Second):
		t.Error("no POST /runs request reached the server")
	}
}

// TestIntegrationAdmission saturates admission control with starts held
// in progress and checks the refusals on the wire: 503 overloaded with
// Retry-After, at once, with no workflow started; and that a tenant at its
// limit does not keep another tenant out.
func TestIntegrationAdmission(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits admission.Options
		key    string // the caller while one start of tenant A is held
		want   int
		reason string
	}{
		{"tenant at its limit", admission.Options{MaxStarts: 4, TenantMax: 1}, keyA, http.StatusServiceUnavailable, admission.ReasonTenant},
		{"other tenant admitted", admission.Options{MaxStarts: 4, TenantMax: 1}, keyB, http.StatusCreated, ""},
		{"starts at the limit", admission.Options{MaxStarts: 1, TenantMax: 4}, keyB, http.StatusServiceUnavailable, admission.ReasonStarts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var rejected []string
			limits := tc.limits
			limits.OnReject = func(tenant, reason string) {
				mu.Lock()
				rejected = append(rejected, reason)
				mu.Unlock()
			}
			ctl, err := admission.New(limits)
			if err != nil {
				t.Fatal(err)
			}
			faults := &testenv.Faults{}
			it := newIntegrationWith(t, itestOptions{faults: faults, admission: ctl})
			held, release := make(chan string, 1), make(chan struct{})
			defer close(release)
			var first atomic.Bool
			faults.FailStarts(func(string) (testenv.StartFault, bool) {
				if !first.CompareAndSwap(false, true) {
					return testenv.StartFault{}, false
				}
				return testenv.StartFault{Code: codes.OK, After: func(id string) { held <- id; <-release }}, true
			})
			heldDone := make(chan response, 1)
			go func() {
				heldDone <- call(t, http.MethodPost, it.url+"/runs", keyA, `{"workflowId":"greet","inputs":{"name":"held"}}`)
			}()
			var heldID string
			select {
			case heldID = <-held:
			case <-time.After(30 * time.Second):
				t.Fatal("the first start did not reach Temporal")
			}

			r := it.call(http.MethodPost, "/runs", tc.key, `{"workflowId":"greet","inputs":{"name":"second"}}`)
			if r.status != tc.want {
				t.Fatalf("POST /runs while a start is held: HTTP %d %s; want %d", r.status, r.raw, tc.want)
			}
			starts := faults.Starts()
			if tc.want == http.StatusServiceUnavailable {
				code, _ := r.body["error"].(map[string]any)["code"].(string)
				if code != "overloaded" || r.header.Get("Retry-After") != "1" ||
					!strings.Contains(r.body["error"].(map[string]any)["message"].(string), "retry") {
					t.Fatalf("refusal: Retry-After %q body %s", r.header.Get("Retry-After"), r.raw)
				}
				if len(starts) != 1 || starts[0] != heldID {
					t.Fatalf("start calls made: %v; want only the held one %s", starts, heldID)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(rejected) != 1 || rejected[0] != tc.reason {
					t.Fatalf("OnReject reasons %v; want [%s]", rejected, tc.reason)
				}
			}
			release <- struct{}{}
			if hr := <-heldDone; hr.status != http.StatusCreated {
				t.Fatalf("held start: HTTP %d %s", hr.status, hr.raw)
			}
			// Once the held start returned, tenant A is admitted again.
			it.start(keyA, "greet", `{"name":"after"}`)
			if s := ctl.Stats(); s.Starts != 0 || s.Tenants != 0 {
				t.Fatalf("slots still held after every call returned: %+v", s)
			}
		})
	}
}
