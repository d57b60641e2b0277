package mcpmount

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc/codes"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/mcpmount/internal/wire"
	"github.com/openwop/temporal-mcp/signals"
)

// requestContexts wraps a handler so a test can wait until the server saw
// a request end (its client left).
type requestContexts chan context.Context

func (rc requestContexts) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case rc <- r.Context():
		default:
		}
		next.ServeHTTP(w, r)
	})
}

// waitEnded waits until the server saw the request end.
func (rc requestContexts) waitEnded(t *testing.T) {
	select {
	case ctx := <-rc:
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Second):
			t.Error("the server did not see the client leave")
		}
	case <-time.After(20 * time.Second):
		t.Error("no request reached the server")
	}
}

// callCtx sends one 2026-07-28 request with ctx (so the client can leave
// mid-call) and returns the answer, or the transport error.
func (c *client) callCtx(ctx context.Context, method string, params map[string]any) (rpc, error) {
	c.id++
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    ProtocolVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": c.caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return rpc{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptJSON)
	req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rpc{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return rpc{}, err
	}
	out := rpc{}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out); err != nil {
			return rpc{}, fmt.Errorf("decode %q: %w", raw, err)
		}
	}
	out.Status, out.Header, out.Raw = resp.StatusCode, resp.Header, raw
	return out, nil
}

// TestIntegrationStartFailure injects tools/call start calls that reach
// Temporal but answer the mount an error (a timeout, a lost connection):
// a client still waiting gets its task or its result; a client that left
// has its run cancelled. No run goes on that no client knows.
func TestIntegrationStartFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  codes.Code
		tool  string
		args  map[string]any
		tasks bool
		leave bool
	}{
		{"task, timeout", codes.DeadlineExceeded, "conformance-delay", map[string]any{"delayMs": 300}, true, false},
		{"blocking, unavailable", codes.Unavailable, "greet", map[string]any{"name": "Ada"}, false, false},
		{"blocking, client gone", codes.DeadlineExceeded, "conformance-delay", map[string]any{"delayMs": 3000}, false, true},
		{"task, client gone", codes.Unavailable, "conformance-delay", map[string]any{"delayMs": 3000}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults := &testenv.Faults{}
			contexts := make(requestContexts, 1)
			s := newStackFaulty(t, nil, "", faults, contexts.wrap, nil)
			caps := map[string]any{}
			if tc.tasks {
				caps = tasksCaps()
			}
			c := s.client(t, "", caps)
			ctx, leave := context.WithCancel(context.Background())
			defer leave()
			faults.FailStarts(func(string) (testenv.StartFault, bool) {
				return testenv.StartFault{Code: tc.code, Forward: true, After: func(string) {
					if tc.leave {
						leave()
						contexts.waitEnded(t)
					}
				}}, true
			})
			r, err := c.callCtx(ctx, "tools/call", map[string]any{"name": tc.tool, "arguments": tc.args})
			failed := faults.Failed()
			if len(failed) != 1 {
				t.Fatalf("injected start failures: %v", failed)
			}
			id := failed[0]
			if tc.leave {
				if err == nil {
					t.Fatalf("the client left, yet got HTTP %d %s", r.Status, r.Raw)
				}
				actx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				snap, err := s.runs.Await(actx, auth.Anonymous(), id, func(s signals.Snapshot) bool { return s.Status.Terminal() })
				if err != nil || snap.Status != signals.StatusCancelled ||
					(snap.CancelReason != signals.ReasonStartFailed && snap.CancelReason != signals.ReasonMCPRequestCancelled) {
					t.Fatalf("run %s of a client that left: %s (reason %q), %v; want cancelled", id, snap.Status, snap.CancelReason, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := wantResult(t, r)
			if tc.tasks {
				taskID, _ := res["taskId"].(string)
				if runOf(t, taskID) != id {
					t.Fatalf("CreateTaskResult %v; want the task of run %s", res, id)
				}
				waitTask(t, c, taskID, status("completed"))
				return
			}
			if text(t, res) != "Hello, Ada!" {
				t.Fatalf("blocking result %v", res)
			}
		})
	}
}

// TestIntegrationAdmission saturates admission control with a start held
// in progress and checks the refusals on the wire: HTTP 503, Retry-After,
// a JSON-RPC error that says to retry with data.retryAfter, at once and
// with no workflow started; and that a tenant at its limit does not keep
// another tenant out.
func TestIntegrationAdmission(t *testing.T) {
	keys := keysFor(t, "ka=tenant-a:urn:test:alice,kb=tenant-b:urn:test:bob")
	for _, tc := range []struct {
		name string
		// limits; the held call is tenant A's, blocking or a task.
		limits     admission.Options
		heldTasked bool
		key        string // the second caller
		tasked     bool   // the second call is a task
		reason     string // "" when admitted
	}{
		{"tenant at its limit", admission.Options{MaxStarts: 4, TenantMax: 1}, true, "ka", true, admission.ReasonTenant},
		{"other tenant admitted", admission.Options{MaxStarts: 4, TenantMax: 1}, true, "kb", true, ""},
		{"starts at the limit", admission.Options{MaxStarts: 1, TenantMax: 4}, true, "kb", true, admission.ReasonStarts},
		{"blocking calls at the limit", admission.Options{MaxStarts: 4, MaxWaiting: 1, TenantMax: 4}, false, "kb", false, admission.ReasonWaiting},
		{"task admitted beside waiting calls", admission.Options{MaxStarts: 4, MaxWaiting: 1, TenantMax: 4}, false, "kb", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var rejected []string
			limits := tc.limits
			limits.OnReject = func(_, reason string) {
				mu.Lock()
				rejected = append(rejected, reason)
				mu.Unlock()
			}
			ctl, err := admission.New(limits)
			if err != nil {
				t.Fatal(err)
			}
			faults := &testenv.Faults{}
			s := newStackFaulty(t, keys, "", faults, nil, func(o *Options) func(*Mount) {
				o.Admission = ctl
				return nil
			})
			held, release := make(chan string, 1), make(chan struct{})
			defer close(release)
			var first atomic.Bool
			faults.FailStarts(func(string) (testenv.StartFault, bool) {
				if !first.CompareAndSwap(false, true) {
					return testenv.StartFault{}, false
				}
				return testenv.StartFault{Code: codes.OK, After: func(id string) { held <- id; <-release }}, true
			})
			capsOf := func(tasked bool) map[string]any {
				if tasked {
					return tasksCaps()
				}
				return map[string]any{}
			}
			heldDone := make(chan rpc, 1)
			go func() {
				r, _ := s.client(t, "ka", capsOf(tc.heldTasked)).callCtx(context.Background(), "tools/call",
					map[string]any{"name": "conformance-delay", "arguments": map[string]any{"delayMs": 200}})
				heldDone <- r
			}()
			var heldID string
			select {
			case heldID = <-held:
			case <-time.After(30 * time.Second):
				t.Fatal("the first start did not reach Temporal")
			}

			c := s.client(t, tc.key, capsOf(tc.tasked))
			r := c.call("tools/call", map[string]any{"name": "conformance-delay", "arguments": map[string]any{"delayMs": 200}}, nil)
			if tc.reason == "" {
				wantResult(t, r)
			} else {
				wantError(t, r, http.StatusServiceUnavailable, wire.CodeInternalError)
				var data struct {
					RetryAfter int    `json:"retryAfter"`
					Reason     string `json:"reason"`
				}
				_ = json.Unmarshal(r.Error.Data, &data)
				if r.Header.Get("Retry-After") != "1" || data.RetryAfter != 1 || data.Reason != tc.reason ||
					!strings.Contains(r.Error.Message, "retry") || string(r.ID) != "1" {
					t.Fatalf("refusal: Retry-After %q body %s", r.Header.Get("Retry-After"), r.Raw)
				}
				if starts := faults.Starts(); len(starts) != 1 || starts[0] != heldID {
					t.Fatalf("start calls made: %v; want only the held one %s", starts, heldID)
				}
				mu.Lock()
				got := append([]string(nil), rejected...)
				mu.Unlock()
				if len(got) != 1 || got[0] != tc.reason {
					t.Fatalf("OnReject reasons %v; want [%s]", got, tc.reason)
				}
				// A session-dialect request: the same error, with status 200 as
				// that protocol answers errors, and Retry-After.
				if !tc.tasked {
					sessionless := post(t, s.URL+"/mcp", map[string]string{"Content-Type": "application/json", "Accept": acceptJSON,
						"Authorization": "Bearer " + tc.key},
						[]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"conformance-delay","arguments":{"delayMs":200}}}`))
					wantError(t, sessionless, http.StatusOK, wire.CodeInternalError)
					if sessionless.Header.Get("Retry-After") != "1" || !strings.Contains(string(sessionless.Error.Data), `"retryAfter":1`) {
						t.Fatalf("session-dialect refusal: Retry-After %q body %s", sessionless.Header.Get("Retry-After"), sessionless.Raw)
					}
				}
			}
			release <- struct{}{}
			if hr := <-heldDone; hr.Status != http.StatusOK || hr.Error != nil {
				t.Fatalf("held call: HTTP %d %s", hr.Status, hr.Raw)
			}
			if st := ctl.Stats(); st != (admission.Stats{}) {
				t.Fatalf("slots still held after every call returned: %+v", st)
			}
		})
	}
}

// TestIntegrationBurst sends 500 simultaneous blocking tools/call over
// HTTP, with one start call in ten failing after it reached Temporal (a
// timeout), under the default admission limits. Afterwards every run that
// executed has a caller who got its result: matched by listing the
// tenant's workflows in visibility against the answers.
func TestIntegrationBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("burst of 500 calls")
	}
	const n = 500
	tenant := testenv.UniqueID("burst")
	keys := keysFor(t, "kburst="+tenant+":urn:test:burst")
	ctl, err := admission.New(admission.Options{})
	if err != nil {
		t.Fatal(err)
	}
	faults := &testenv.Faults{}
	var starts atomic.Int64
	faults.FailStarts(func(string) (testenv.StartFault, bool) {
		if starts.Add(1)%10 != 0 {
			return testenv.StartFault{}, false
		}
		return testenv.StartFault{Code: codes.DeadlineExceeded, Forward: true}, true
	})
	s := newStackFaulty(t, keys, "", faults, nil, func(o *Options) func(*Mount) {
		o.Admission = ctl
		return nil
	})

	type answer struct {
		ok         bool   // a result
		text       string // its text
		overloaded bool   // refused by admission control
		err        string // anything else
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &client{t: t, url: s.URL + "/mcp", key: "kburst", caps: map[string]any{}, id: i}
			<-gate
			r, err := c.callCtx(context.Background(), "tools/call",
				map[string]any{"name": "greet", "arguments": map[string]any{"name": fmt.Sprintf("c%d", i)}})
			switch {
			case err != nil:
				answers[i].err = err.Error()
			case r.Error != nil && r.Status == http.StatusServiceUnavailable && r.Header.Get("Retry-After") != "":
				answers[i].overloaded = true
			case r.Error != nil || r.Result == nil:
				answers[i].err = string(r.Raw)
			default:
				answers[i].ok = true
				if cs, _ := r.Result["content"].([]any); len(cs) > 0 {
					answers[i].text, _ = cs[0].(map[string]any)["text"].(string)
				}
			}
		}()
	}
	close(gate)
	wg.Wait()

	answered := map[string]bool{} // caller name -> got a result
	var ok, overloaded, failed int
	for i, a := range answers {
		name := fmt.Sprintf("c%d", i)
		switch {
		case a.ok:
			ok++
			if a.text != "Hello, "+name+"!" {
				t.Errorf("caller %s got %q", name, a.text)
			}
			answered[name] = true
		case a.overloaded:
			overloaded++
		default:
			failed++
		}
	}
	t.Logf("%d calls: %d results, %d refused at once (overloaded), %d other errors; %d start calls failed after reaching Temporal",
		n, ok, overloaded, failed, len(faults.Failed()))

	// Every workflow of the tenant: closed (none left running), and each
	// one that completed belongs to a caller who got its result.
	query := fmt.Sprintf("%s = '%s'", signals.SearchAttrTenant, tenant)
	greeting := regexp.MustCompile(`Hello, (c\d+)!`)
	// Visibility follows the runs' ends (the rule of internal/testing/visibility):
	// list until none is running and every caller with a result has a
	// completed run listed. Each completed run is read once for its greeting.
	nameOf := map[string]string{} // completed run -> caller name
	var listed int
	err = visibility.Await(context.Background(), time.Minute, func(ctx context.Context) error {
		execs := listAll(t, s, query)
		listed = len(execs)
		running, completed := 0, map[string]int{}
		for _, e := range execs {
			id := e.GetExecution().GetWorkflowId()
			switch e.GetStatus() {
			case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
				running++
			case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
				if _, ok := nameOf[id]; !ok {
					nameOf[id] = greetingOf(t, s, tenant, id, greeting)
				}
				completed[nameOf[id]]++
			}
		}
		for name := range answered {
			if completed[name] == 0 {
				return fmt.Errorf("%d workflows listed running; caller %s got a result and no run of it is listed completed", running, name)
			}
		}
		if running > 0 {
			return fmt.Errorf("%d workflows listed running", running)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("after the burst: %v", err)
	}
	completed := map[string]int{}
	var unmatched []string
	for id, name := range nameOf {
		completed[name]++
		if !answered[name] {
			unmatched = append(unmatched, id+" ("+name+")")
		}
	}
	if len(unmatched) > 0 {
		t.Fatalf("%d runs executed whose caller got an error: %v", len(unmatched), unmatched)
	}
	for name := range answered {
		if completed[name] != 1 {
			t.Fatalf("caller %s got a result; its runs completed: %d", name, completed[name])
		}
	}
	t.Logf("%d workflows listed, %d completed, each with a caller who got its result", listed, len(completed))
}

// greetingOf reads the completed run id and returns the caller name its
// greeting names.
func greetingOf(t *testing.T, s *stack, tenant, id string, greeting *regexp.Regexp) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := s.runs.Get(ctx, signals.Subject{Tenant: tenant}, id)
	if err != nil {
		t.Fatalf("read run %s: %v", id, err)
	}
	raw, _ := json.Marshal(snap.Result)
	m := greeting.FindSubmatch(raw)
	if m == nil {
		t.Fatalf("completed run %s has no greeting: %s", id, raw)
	}
	return string(m[1])
}

// listAll lists every workflow execution matching query from visibility.
func listAll(t *testing.T, s *stack, query string) []*workflowpb.WorkflowExecutionInfo {
	t.Helper()
	var out []*workflowpb.WorkflowExecutionInfo
	var token []byte
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := s.env.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: s.env.Namespace, Query: query, PageSize: 1000, NextPageToken: token,
		})
		cancel()
		if err != nil {
			t.Fatalf("list workflows %q: %v", query, err)
		}
		out = append(out, resp.GetExecutions()...)
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out
		}
	}
}
