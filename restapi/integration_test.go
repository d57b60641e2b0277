package restapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap/zaptest"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// These tests serve the REST API over the real run service, on the embedded
// Temporal server with a worker running the default registry and fixtures.

// API keys of the integration server. keyA and keyApprover belong to
// tenant A, keyB to tenant B.
const (
	keyA        = "key-alice"
	keyB        = "key-bob"
	keyApprover = "key-listed-approver"
)

type itest struct {
	t   *testing.T
	url string
	svc *runs.Service
	// tenantA and tenantB are unique to the test, so listings see only
	// its runs.
	tenantA, tenantB string
}

func newIntegration(t *testing.T) *itest {
	t.Helper()
	return newIntegrationWith(t, itestOptions{})
}

// itestOptions adjust the integration server.
type itestOptions struct {
	// faults, when set, are injected into the run service's Temporal calls.
	faults *testenv.Faults
	// admission is the server's admission control (nil: none).
	admission *admission.Controller
	// wrap, when set, wraps the server's handler.
	wrap func(http.Handler) http.Handler
	// specs, when set, edits the specs the server's catalog serves (the
	// worker runs the example registry whatever they say).
	specs func([]signals.ToolSpec) []signals.ToolSpec
}

func newIntegrationWith(t *testing.T, o itestOptions) *itest {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the embedded Temporal server")
	}
	env := testenv.Temporal(t)
	tq := testenv.UniqueTaskQueue(t)
	logger := zaptest.NewLogger(t)
	acts := tools.NewActivities(logger, tools.ActivityOptions{HeartbeatInterval: 200 * time.Millisecond, SectionDelay: 10 * time.Millisecond})
	reg, err := conformancetools.Registry(acts)
	if err != nil {
		t.Fatal(err)
	}
	env.NewWorker(t, tq, reg.Register)
	c := env.Client
	if o.faults != nil {
		c = env.DialFaulty(t, o.faults)
	}
	svc := runs.New(c, logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
	it := &itest{t: t, svc: svc, tenantA: testenv.UniqueID("ta-"), tenantB: testenv.UniqueID("tb-")}
	keys, err := auth.New([]auth.Key{
		{Key: keyA, Tenant: it.tenantA, Subject: "urn:test:alice"},
		{Key: keyB, Tenant: it.tenantB, Subject: "urn:test:bob"},
		{Key: keyApprover, Tenant: it.tenantA, Subject: conformancetools.ListedApprover},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The specs name no task queue: runs start on the service's TaskQueue,
	// which the worker polls.
	specs := reg.Specs()
	if o.specs != nil {
		specs = o.specs(specs)
	}
	h, err := New(Options{Runs: svc, Authenticate: keys.Authenticate, Catalog: staticCatalog(t, specs...),
		Logger: logger, Admission: o.admission})
	if err != nil {
		t.Fatal(err)
	}
	if o.wrap != nil {
		h = o.wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	it.url = srv.URL
	return it
}

func (it *itest) call(method, path, key, body string) response {
	it.t.Helper()
	return call(it.t, method, it.url+path, key, body)
}

// start creates a run over REST and returns its id.
func (it *itest) start(key, workflowID, inputs string) string {
	it.t.Helper()
	r := it.call(http.MethodPost, "/runs", key, fmt.Sprintf(`{"workflowId":%q,"inputs":%s}`, workflowID, inputs))
	if r.status != http.StatusCreated {
		it.t.Fatalf("create %s: %d %s", workflowID, r.status, r.raw)
	}
	id, _ := r.body["runId"].(string)
	if !runid.Valid(id) {
		it.t.Fatalf("create %s: runId %q", workflowID, id)
	}
	return id
}

func runPath(id string) string { return "/runs/" + runid.Project(id) }

// get reads the run's snapshot.
func (it *itest) get(key, id string) response {
	it.t.Helper()
	r := it.call(http.MethodGet, runPath(id), key, "")
	if r.status != http.StatusOK {
		it.t.Fatalf("GET %s: %d %s", id, r.status, r.raw)
	}
	return r
}

// pollPage is the decoded answer of events/poll.
type pollPage struct {
	RunID        string          `json:"runId"`
	Events       []signals.Event `json:"events"`
	LastSequence int             `json:"lastSequence"`
	Status       signals.Status  `json:"status"`
	IsTerminal   bool            `json:"isTerminal"`
}

func (it *itest) poll(key, id string, after, timeoutSec int) pollPage {
	it.t.Helper()
	q := fmt.Sprintf("%s/events/poll?afterSequence=%d", runPath(id), after)
	if timeoutSec > 0 {
		q += fmt.Sprintf("&timeout=%d", timeoutSec)
	}
	r := it.call(http.MethodGet, q, key, "")
	if r.status != http.StatusOK {
		it.t.Fatalf("poll %s: %d %s", id, r.status, r.raw)
	}
	var p pollPage
	if err := json.Unmarshal(r.raw, &p); err != nil {
		it.t.Fatal(err)
	}
	return p
}

// events returns the run's whole log.
func (it *itest) events(key, id string) []signals.Event {
	it.t.Helper()
	return it.poll(key, id, -1, 0).Events
}

// waitTerminal long-polls the log until the run is terminal (at most
// within) and returns the whole log.
func (it *itest) waitTerminal(key, id string, within time.Duration) []signals.Event {
	it.t.Helper()
	deadline := time.Now().Add(within)
	var all []signals.Event
	after := -1
	for {
		p := it.poll(key, id, after, 1)
		all = append(all, p.Events...)
		if len(p.Events) > 0 {
			after = p.Events[len(p.Events)-1].Sequence
		}
		if p.IsTerminal && after >= p.LastSequence {
			return all
		}
		if time.Now().After(deadline) {
			it.t.Fatalf("run %s not terminal after %v (status %s)", id, within, p.Status)
		}
	}
}

// waitStatus reads the snapshot until its status is want.
func (it *itest) waitStatus(key, id string, want signals.Status, within time.Duration) response {
	it.t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := it.get(key, id)
		if r.body["status"] == string(want) {
			return r
		}
		if time.Now().After(deadline) {
			it.t.Fatalf("run %s: status %v after %v, want %s", id, r.body["status"], within, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkLog checks the event log rules: envelope fields, sequence 0.. with
// no gap, exactly one terminal event and nothing after it, at most one
// interrupt.resolved per interrupt. It returns the event types.
func checkLog(t *testing.T, id string, events []signals.Event) []string {
	t.Helper()
	var types []string
	ids := map[string]bool{}
	resolved := map[string]int{}
	terminal := -1
	for i, e := range events {
		types = append(types, e.Type)
		if e.Sequence != i || e.RunID != id || e.EventID == "" || ids[e.EventID] ||
			e.SchemaVersion != signals.EventLogSchemaVersion || e.Timestamp.IsZero() || len(e.Payload) == 0 {
			t.Fatalf("event %d has a bad envelope: %+v", i, e)
		}
		ids[e.EventID] = true
		if signals.TerminalEvent(e.Type) {
			if terminal >= 0 {
				t.Fatalf("two terminal events: %v", types)
			}
			terminal = i
		}
		if e.Type == signals.EventInterruptResolved {
			var p struct {
				InterruptID string `json:"interruptId"`
			}
			_ = json.Unmarshal(e.Payload, &p)
			if resolved[p.InterruptID]++; resolved[p.InterruptID] > 1 {
				t.Fatalf("interrupt %s resolved twice: %v", p.InterruptID, types)
			}
		}
	}
	if terminal >= 0 && terminal != len(events)-1 {
		t.Fatalf("events after the terminal event: %v", types)
	}
	return types
}

func countType(events []signals.Event, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func payloadOf(t *testing.T, events []signals.Event, typ string) map[string]any {
	t.Helper()
	for _, e := range events {
		if e.Type == typ {
			var m map[string]any
			if err := json.Unmarshal(e.Payload, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no %s event", typ)
	return nil
}

// waitSuspended waits for the approval run to read waiting-approval and
// returns its snapshot.
func (it *itest) waitSuspended(key, id string) response {
	it.t.Helper()
	r := it.waitStatus(key, id, signals.StatusWaitingApproval, 10*time.Second)
	if r.body["currentNodeId"] != "gate" {
		it.t.Fatalf("currentNodeId = %v", r.body["currentNodeId"])
	}
	return r
}

func TestIntegrationApproval(t *testing.T) {
	it := newIntegration(t)
	for _, tt := range []struct {
		action   string
		approved bool
	}{{"accept", true}, {"reject", false}} {
		t.Run(tt.action, func(t *testing.T) {
			it.t = t
			id := it.start(keyA, "conformance-approval", `{}`)
			snap := it.waitSuspended(keyA, id)
			owner := snap.body["owner"].(map[string]any)
			if owner["tenant"] != it.tenantA || snap.body["eventLogSchemaVersion"] != float64(signals.EventLogSchemaVersion) {
				t.Fatalf("snapshot %s", snap.raw)
			}

			// Reads append nothing.
			before := it.poll(keyA, id, -1, 0).LastSequence
			for range 3 {
				it.get(keyA, id)
				it.poll(keyA, id, -1, 0)
			}
			if after := it.poll(keyA, id, -1, 0).LastSequence; after != before {
				t.Fatalf("reading the run appended events: lastSequence %d -> %d", before, after)
			}
			suspended := payloadOf(t, it.events(keyA, id), signals.EventNodeSuspended)
			wantInterrupt := snap.body["interrupts"].([]any)[0].(map[string]any)["interruptId"]
			if suspended["interruptId"] != wantInterrupt || !strings.HasPrefix(wantInterrupt.(string), id) {
				t.Fatalf("node.suspended %v, open interrupt %v", suspended, wantInterrupt)
			}

			r := it.call(http.MethodPost, runPath(id)+"/interrupts/gate", keyA, fmt.Sprintf(`{"resumeValue":{"action":%q}}`, tt.action))
			if r.status != http.StatusOK || r.body["interruptId"] != wantInterrupt {
				t.Fatalf("resolve: %d %s", r.status, r.raw)
			}
			events := it.waitTerminal(keyA, id, 10*time.Second)
			types := checkLog(t, id, events)
			for _, want := range []string{signals.EventRunStarted, signals.EventNodeSuspended, signals.EventInterruptRequested, signals.EventInterruptResolved, signals.EventRunCompleted} {
				if !slices.Contains(types, want) {
					t.Fatalf("log lacks %s: %v", want, types)
				}
			}
			started := payloadOf(t, events, signals.EventRunStarted)
			if started["transport"] != signals.TransportREST || started["owner"].(map[string]any)["tenant"] != it.tenantA {
				t.Fatalf("run.started %v", started)
			}
			res := payloadOf(t, events, signals.EventInterruptResolved)
			if res["decision"] != tt.action || res["resolvedBy"].(map[string]any)["subjectId"] != "urn:test:alice" {
				t.Fatalf("interrupt.resolved %v", res)
			}
			final := it.get(keyA, id)
			out, _ := final.body["outputs"].(map[string]any)
			if final.body["status"] != "completed" || out["approved"] != tt.approved {
				t.Fatalf("final snapshot %s", final.raw)
			}
			if _, ok := final.body["currentNodeId"]; ok {
				t.Fatalf("a completed run has currentNodeId: %s", final.raw)
			}
			// Answering again resolves nothing.
			wantError(t, it.call(http.MethodPost, runPath(id)+"/interrupts/gate", keyA, `{"resumeValue":{"action":"accept"}}`),
				http.StatusConflict, "interrupt_already_resolved")
			if n := len(it.events(keyA, id)); n != len(events) {
				t.Fatalf("a late resolution changed the log: %d -> %d events", len(events), n)
			}
		})
	}
}

func TestIntegrationApprovalBadInput(t *testing.T) {
	it := newIntegration(t)
	id := it.start(keyA, "conformance-approval", `{}`)
	it.waitSuspended(keyA, id)
	for _, body := range []string{`{"resumeValue":{"action":"maybe"}}`, `{"resumeValue":{"approve":true}}`, `{"resumeValue":"accept"}`, `{}`} {
		wantError(t, it.call(http.MethodPost, runPath(id)+"/interrupts/gate", keyA, body), http.StatusBadRequest, "validation_error")
	}
	wantError(t, it.call(http.MethodPost, runPath(id)+"/interrupts/other-node", keyA, `{"resumeValue":{"action":"accept"}}`),
		http.StatusNotFound, "interrupt_not_found")
	if countType(it.events(keyA, id), signals.EventInterruptResolved) != 0 {
		t.Fatal("a refused resolution was applied")
	}
	it.waitSuspended(keyA, id)
}

func TestIntegrationApprovers(t *testing.T) {
	it := newIntegration(t)
	id := it.start(keyA, "conformance-approval-approvers", `{}`)
	it.waitSuspended(keyA, id)
	wantError(t, it.call(http.MethodPost, runPath(id)+"/interrupts/gate", keyA, `{"resumeValue":{"action":"accept"}}`),
		http.StatusForbidden, "forbidden")
	// Who may answer is checked before what the answer says, as on every
	// path: a non-approver's answer off the question is 403 too.
	wantError(t, it.call(http.MethodPost, runPath(id)+"/interrupts/gate", keyA, `{"resumeValue":{"action":"maybe"}}`),
		http.StatusForbidden, "forbidden")
	// Still waiting, nothing resolved.
	it.waitSuspended(keyA, id)
	if n := countType(it.events(keyA, id), signals.EventInterruptResolved); n != 0 {
		t.Fatalf("%d interrupt.resolved after a refused resolution", n)
	}
	// The listed approver may resolve it.
	if r := it.call(http.MethodPost, runPath(id)+"/interrupts/gate", keyApprover, `{"resumeValue":{"action":"accept"}}`); r.status != http.StatusOK {
		t.Fatalf("listed approver: %d %s", r.status, r.raw)
	}
	events := it.waitTerminal(keyA, id, 10*time.Second)
	checkLog(t, id, events)
	if res := payloadOf(t, events, signals.EventInterruptResolved); res["resolvedBy"].(map[string]any)["subjectId"] != conformancetools.ListedApprover {
		t.Fatalf("interrupt.resolved %v", res)
	}
	if st := it.get(keyA, id).body["status"]; st != "completed" {
		t.Fatalf("status %v", st)
	}
}

func TestIntegrationFailure(t *testing.T) {
	it := newIntegration(t)
	id := it.start(keyA, "conformance-failure", `{}`)
	events := it.waitTerminal(keyA, id, 5*time.Second)
	types := checkLog(t, id, events)
	if types[0] != signals.EventRunStarted || !slices.Contains(types, signals.EventNodeFailed) || types[len(types)-1] != signals.EventRunFailed {
		t.Fatalf("log %v", types)
	}
	snap := it.get(keyA, id)
	e, _ := snap.body["error"].(map[string]any)
	if snap.body["status"] != "failed" || e["code"] != "conformance_test_failure" || e["message"] != "Intentional conformance failure" {
		t.Fatalf("snapshot %s", snap.raw)
	}
	// A cancel on a terminal run is refused and appends nothing.
	wantError(t, it.call(http.MethodPost, runPath(id)+"/cancel", keyA, ``), http.StatusConflict, "run_terminal")
	if n := len(it.events(keyA, id)); n != len(events) {
		t.Fatalf("cancel of a terminal run changed the log: %d -> %d", len(events), n)
	}
}

func TestIntegrationDelay(t *testing.T) {
	it := newIntegration(t)
	id := it.start(keyA, "conformance-delay", `{"delayMs":2500}`)
	it.waitStatus(keyA, id, signals.StatusRunning, 2*time.Second)
	events := it.waitTerminal(keyA, id, 10*time.Second)
	if types := checkLog(t, id, events); types[len(types)-1] != signals.EventRunCompleted {
		t.Fatalf("log %v", types)
	}
	snap := it.get(keyA, id)
	if snap.body["status"] != "completed" || snap.body["outputs"].(map[string]any)["delayedMs"] != float64(2500) {
		t.Fatalf("snapshot %s", snap.raw)
	}
	wantError(t, it.call(http.MethodPost, "/runs", keyA, `{"workflowId":"conformance-delay","inputs":{"delayMs":30001}}`),
		http.StatusBadRequest, "validation_error")
}

// TestIntegrationLongPoll checks that events/poll waits for the next event
// instead of answering at once, and answers as soon as it comes.
func TestIntegrationLongPoll(t *testing.T) {
	it := newIntegration(t)
	id := it.start(keyA, "conformance-delay", `{"delayMs":1500}`)
	it.waitStatus(keyA, id, signals.StatusRunning, 2*time.Second)
	last := it.poll(keyA, id, -1, 0).LastSequence
	// Nothing new until the delay ends, then node.completed and run.completed.
	p := it.poll(keyA, id, last, 20)
	if len(p.Events) == 0 || p.Events[0].Sequence != last+1 {
		t.Fatalf("long poll answered %+v", p)
	}
	// A poll on a terminal run answers at once with no events.
	events := it.waitTerminal(keyA, id, 5*time.Second)
	start := time.Now()
	p = it.poll(keyA, id, events[len(events)-1].Sequence, 30)
	if len(p.Events) != 0 || !p.IsTerminal || p.Status != signals.StatusCompleted || time.Since(start) > 5*time.Second {
		t.Fatalf("poll after the end: %+v in %v", p, time.Since(start))
	}
}

func TestIntegrationCancellable(t *testing.T) {
	it := newIntegration(t)
	id := it.start(keyA, "conformance-cancellable", `{"delayMs":20000}`)
	it.waitStatus(keyA, id, signals.StatusRunning, 2*time.Second)
	r := it.call(http.MethodPost, runPath(id)+"/cancel", keyA, `{"reason":"integration test"}`)
	if r.status != http.StatusOK || r.body["runId"] != id || (r.body["status"] != "cancelling" && r.body["status"] != "cancelled") {
		t.Fatalf("cancel: %d %s", r.status, r.raw)
	}
	events := it.waitTerminal(keyA, id, 5*time.Second)
	types := checkLog(t, id, events)
	if types[len(types)-1] != signals.EventRunCancelled {
		t.Fatalf("log %v", types)
	}
	if p := payloadOf(t, events, signals.EventRunCancelled); p["reason"] != "integration test" {
		t.Fatalf("run.cancelled %v", p)
	}
	if st := it.get(keyA, id).body["status"]; st != "cancelled" {
		t.Fatalf("status %v", st)
	}
	wantError(t, it.call(http.MethodPost, runPath(id)+"/cancel", keyA, ``), http.StatusConflict, "run_terminal")
	if n := len(it.events(keyA, id)); n != len(events) {
		t.Fatalf("a second cancel changed the log: %d -> %d", len(events), n)
	}
}

// TestIntegrationConcurrentResolve sends two resolutions of one interrupt
// at once: exactly one is applied (200), the other is 409, and the log has
// one interrupt.resolved.
func TestIntegrationConcurrentResolve(t *testing.T) {
	it := newIntegration(t)
	for round := range 5 {
		id := it.start(keyA, "conformance-approval", `{}`)
		it.waitSuspended(keyA, id)
		var wg sync.WaitGroup
		results := make([]response, 2)
		for i, action := range []string{"accept", "reject"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = call(t, http.MethodPost, it.url+runPath(id)+"/interrupts/gate", keyA, fmt.Sprintf(`{"resumeValue":{"action":%q}}`, action))
			}()
		}
		wg.Wait()
		var ok, conflict int
		for _, r := range results {
			switch {
			case r.status == http.StatusOK:
				ok++
			case r.status == http.StatusConflict && r.errorCode() == "interrupt_already_resolved":
				conflict++
			default:
				t.Fatalf("round %d: unexpected answer %d %s", round, r.status, r.raw)
			}
		}
		if ok != 1 || conflict != 1 {
			t.Fatalf("round %d: %d ok, %d conflict", round, ok, conflict)
		}
		events := it.waitTerminal(keyA, id, 10*time.Second)
		checkLog(t, id, events)
		if n := countType(events, signals.EventInterruptResolved); n != 1 {
			t.Fatalf("round %d: %d interrupt.resolved", round, n)
		}
	}
}

// TestIntegrationResolveRacesCancel resolves and cancels one run at once:
// whatever wins, the log has exactly one terminal event, last, and the
// snapshot agrees with it.
func TestIntegrationResolveRacesCancel(t *testing.T) {
	it := newIntegration(t)
	for round := range 5 {
		id := it.start(keyA, "conformance-approval", `{}`)
		it.waitSuspended(keyA, id)
		var wg sync.WaitGroup
		var resolve, cancel response
		wg.Add(2)
		go func() {
			defer wg.Done()
			resolve = call(t, http.MethodPost, it.url+runPath(id)+"/interrupts/gate", keyA, `{"resumeValue":{"action":"accept"}}`)
		}()
		go func() {
			defer wg.Done()
			cancel = call(t, http.MethodPost, it.url+runPath(id)+"/cancel", keyA, ``)
		}()
		wg.Wait()
		// The resolution wins (200), or finds the run ended (409) or its
		// interrupt closed by the cancel while the run is cancelling (404).
		if resolve.status != http.StatusOK && resolve.status != http.StatusConflict && resolve.errorCode() != "interrupt_not_found" {
			t.Fatalf("round %d: resolve %d %s", round, resolve.status, resolve.raw)
		}
		if cancel.status != http.StatusOK && !(cancel.status == http.StatusConflict && cancel.errorCode() == "run_terminal") {
			t.Fatalf("round %d: cancel %d %s", round, cancel.status, cancel.raw)
		}
		events := it.waitTerminal(keyA, id, 10*time.Second)
		types := checkLog(t, id, events)
		var terminals []string
		for _, typ := range types {
			if signals.TerminalEvent(typ) {
				terminals = append(terminals, typ)
			}
		}
		if len(terminals) != 1 {
			t.Fatalf("round %d: terminal events %v", round, terminals)
		}
		want := map[string]string{signals.EventRunCompleted: "completed", signals.EventRunCancelled: "cancelled"}[terminals[0]]
		if st := it.get(keyA, id).body["status"]; st != want {
			t.Fatalf("round %d: status %v after %s", round, st, terminals[0])
		}
		if resolve.status == http.StatusOK && countType(events, signals.EventInterruptResolved) != 1 {
			t.Fatalf("round %d: resolve answered 200 but the log is %v", round, types)
		}
		if cancel.status == http.StatusConflict && terminals[0] != signals.EventRunCompleted {
			t.Fatalf("round %d: cancel answered run_terminal but the run ended %s", round, terminals[0])
		}
		// Settle: a late cancel appends nothing.
		it.call(http.MethodPost, runPath(id)+"/cancel", keyA, ``)
		if n := len(it.events(keyA, id)); n != len(events) {
			t.Fatalf("round %d: the log grew after the end: %d -> %d", round, len(events), n)
		}
	}
}

// TestIntegrationCrossTenant: tenant B gets 403 id_tenant_mismatch on every
// run path for tenant A's real run, the same answer as for an id that does
// not exist, and A's run is untouched.
func TestIntegrationCrossTenant(t *testing.T) {
	it := newIntegration(t)
	id := it.start(keyA, "conformance-approval", `{}`)
	it.waitSuspended(keyA, id)
	before := it.events(keyA, id)
	ghost, err := runid.New(it.tenantA, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{id, ghost} {
		for _, seg := range []string{runid.Project(target), strings.Replace(target, "/", "%2F", 1)} {
			for _, p := range []struct{ method, path, body string }{
				{http.MethodGet, "/runs/" + seg, ""},
				{http.MethodPost, "/runs/" + seg + "/cancel", `{}`},
				{http.MethodGet, "/runs/" + seg + "/events/poll?timeout=1", ""},
				{http.MethodPost, "/runs/" + seg + "/interrupts/gate", `{"resumeValue":{"action":"accept"}}`},
			} {
				wantError(t, it.call(p.method, p.path, keyB, p.body), http.StatusForbidden, "id_tenant_mismatch")
			}
		}
	}
	a := it.call(http.MethodGet, runPath(id), keyB, "")
	b := it.call(http.MethodGet, runPath(ghost), keyB, "")
	if string(a.raw) != string(b.raw) {
		t.Fatalf("the answer reveals existence:\n%s\n%s", a.raw, b.raw)
	}
	// B's listing does not show A's run.
	if r := it.call(http.MethodGet, "/runs", keyB, ""); r.status != http.StatusOK || string(r.raw) != "{\"runs\":[]}\n" {
		t.Fatalf("tenant B lists %s", r.raw)
	}
	it.waitSuspended(keyA, id)
	if after := it.events(keyA, id); len(after) != len(before) {
		t.Fatalf("tenant B changed the log: %d -> %d events", len(before), len(after))
	}
	// The owner's own unknown run is 404.
	wantError(t, it.call(http.MethodGet, runPath(ghost), keyA, ""), http.StatusNotFound, "run_not_found")
}

// TestIntegrationList lists 1 000 runs of one tenant, paging by limit and
// cursor and filtering by workflowId and status. To stay fast, the 1 000 runs
// are started directly on Temporal as runs.Service starts them (same
// workflow id, memo and search attributes) on a task queue no worker polls,
// so they stay pending or running; a few real runs add terminal statuses.
func TestIntegrationList(t *testing.T) {
	it := newIntegration(t)
	const (
		total    = 1000
		approval = 100 // of total, conformance-approval runs reading waiting-approval
		failed   = 3   // real conformance-failure runs, on top of total
	)
	env := testenv.Temporal(t)
	idle := testenv.UniqueTaskQueue(t) + "-idle"
	caller := signals.Subject{Issuer: auth.IssuerAPIKey, SubjectID: "urn:test:alice", Tenant: it.tenantA, Kind: "api-key"}
	owner := signals.Owner{Tenant: it.tenantA, Subject: caller}

	started := time.Now()
	ids := make([]string, total)
	var wg sync.WaitGroup
	work := make(chan int)
	errs := make(chan error, total)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				tool, status := "conformance-delay", signals.StatusRunning
				if i%(total/approval) == 0 {
					tool, status = "conformance-approval", signals.StatusWaitingApproval
				}
				id, err := runid.New(it.tenantA, nil)
				if err != nil {
					errs <- err
					continue
				}
				_, err = env.Client.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{
					ID:        id,
					TaskQueue: idle,
					// No workflow task until the test is long over: the
					// start is one write, and nothing waits in matching.
					StartDelay: time.Hour,
					Memo:       map[string]any{"owner": owner, "transport": signals.TransportREST},
					TypedSearchAttributes: temporal.NewSearchAttributes(
						temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTenant).ValueSet(it.tenantA),
						temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTool).ValueSet(tool),
						temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTransport).ValueSet(signals.TransportREST),
						temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrStatus).ValueSet(string(status)),
					),
				}, tool, signals.StartRequest{Arguments: json.RawMessage(`{}`), Owner: owner, Transport: signals.TransportREST})
				if err != nil {
					errs <- err
					continue
				}
				ids[i] = id
			}
		}()
	}
	for i := range total {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var failedIDs []string
	for range failed {
		id := it.start(keyA, "conformance-failure", `{}`)
		it.waitTerminal(keyA, id, 5*time.Second)
		failedIDs = append(failedIDs, id)
	}
	t.Logf("started %d runs in %v", total+failed, time.Since(started))

	// Visibility follows the starts and the failed runs' ends (the rule of
	// internal/testing/visibility): wait until every run is listed, the
	// failed ones as failed, before checking the filters and the pages.
	visibility.Require(t, "every run listed, the failed ones failed", func(context.Context) error {
		if n := len(it.listAll("?status=failed&limit=100")); n != failed {
			return fmt.Errorf("%d runs listed failed, want %d", n, failed)
		}
		if n := len(it.listAll("?limit=100")); n != total+failed {
			return fmt.Errorf("%d runs listed, want %d", n, total+failed)
		}
		return nil
	})

	all := total + failed
	for _, tt := range []struct {
		query  string
		want   int
		status string
		tool   string
	}{
		{"?limit=100", all, "", ""},
		{"?limit=37", all, "", ""},
		{"", all, "", ""},
		{"?workflowId=conformance-approval&limit=30", approval, "waiting-approval", "conformance-approval"},
		{"?workflowId=conformance-delay&limit=100", total - approval, "running", "conformance-delay"},
		{"?status=waiting-approval&limit=7", approval, "waiting-approval", "conformance-approval"},
		{"?status=running&workflowId=conformance-delay&limit=99", total - approval, "running", "conformance-delay"},
		{"?status=failed&limit=1", failed, "failed", "conformance-failure"},
		{"?status=completed", 0, "", ""},
		{"?status=running&workflowId=conformance-approval", 0, "", ""},
		{"?workflowId=conformance-cancellable", 0, "", ""},
	} {
		t.Run(tt.query, func(t *testing.T) {
			got := it.listAll(tt.query)
			if len(got) != tt.want {
				t.Fatalf("%d runs, want %d", len(got), tt.want)
			}
			seen := map[string]bool{}
			for i, s := range got {
				if seen[s.RunID] {
					t.Fatalf("run %s listed twice", s.RunID)
				}
				seen[s.RunID] = true
				if runid.Tenant(s.RunID) != it.tenantA || s.Owner.Tenant != it.tenantA {
					t.Fatalf("foreign run %+v", s)
				}
				if (tt.status != "" && string(s.Status) != tt.status) || (tt.tool != "" && s.WorkflowID != tt.tool) {
					t.Fatalf("run %+v does not match the filter", s)
				}
				if i > 0 && newer(s, got[i-1]) {
					t.Fatalf("not newest first at %d: %+v before %+v", i, got[i-1], s)
				}
			}
			if tt.want == all {
				for _, id := range append(slices.Clone(ids), failedIDs...) {
					if !seen[id] {
						t.Fatalf("run %s not listed", id)
					}
				}
				// Open runs first, the last started first.
				if got[0].RunID != ids[total-1] && got[0].CreatedAt.Before(got[1].CreatedAt) {
					t.Fatalf("first listed %+v", got[0])
				}
			}
		})
	}
	// Tenant B sees none of them.
	if r := it.call(http.MethodGet, "/runs?limit=100", keyB, ""); string(r.raw) != "{\"runs\":[]}\n" {
		t.Fatalf("tenant B lists %s", r.raw)
	}
	wantError(t, it.call(http.MethodGet, "/runs?cursor=%21%21not-a-cursor", keyA, ""), http.StatusBadRequest, "validation_error")
	wantError(t, it.call(http.MethodGet, "/runs?limit=101", keyA, ""), http.StatusBadRequest, "validation_error")
}

// newer reports whether a is listed as newer than b. Temporal's SQL
// visibility orders runs by close time (open runs first), then by start
// time, newest first: a finished run's updatedAt is its close time.
func newer(a, b runSnapshot) bool {
	aOpen, bOpen := !a.Status.Terminal(), !b.Status.Terminal()
	switch {
	case aOpen != bOpen:
		return aOpen
	case aOpen:
		return a.CreatedAt.After(b.CreatedAt)
	default:
		return a.UpdatedAt.After(b.UpdatedAt)
	}
}

// listAll pages through GET /runs<query> and returns every run listed. It
// checks each page's size against the limit.
func (it *itest) listAll(query string) []runSnapshot {
	it.t.Helper()
	limit := runs.DefaultPageSize
	if i := strings.Index(query, "limit="); i >= 0 {
		fmt.Sscanf(query[i+len("limit="):], "%d", &limit)
	}
	sep := "?"
	if query != "" {
		sep = "&"
	}
	var all []runSnapshot
	cursor := ""
	for pages := 0; ; pages++ {
		q := query
		if cursor != "" {
			q += sep + "cursor=" + cursor
		}
		r := it.call(http.MethodGet, "/runs"+q, keyA, "")
		if r.status != http.StatusOK {
			it.t.Fatalf("GET /runs%s: %d %s", q, r.status, r.raw)
		}
		var page struct {
			Runs       []runSnapshot `json:"runs"`
			NextCursor string        `json:"nextCursor"`
		}
		if err := json.Unmarshal(r.raw, &page); err != nil {
			it.t.Fatal(err)
		}
		if len(page.Runs) > limit {
			it.t.Fatalf("page of %d runs, limit %d", len(page.Runs), limit)
		}
		if page.NextCursor != "" && len(page.Runs) != limit {
			it.t.Fatalf("short page (%d of %d) with a next cursor", len(page.Runs), limit)
		}
		all = append(all, page.Runs...)
		if page.NextCursor == "" {
			return all
		}
		if pages > 2000 {
			it.t.Fatal("paging does not end")
		}
		cursor = page.NextCursor
	}
}

// TestIntegrationDiscovery checks the fixtures the default registry serves.
func TestIntegrationDiscovery(t *testing.T) {
	it := newIntegration(t)
	want := []any{"conformance-approval", "conformance-approval-approvers", "conformance-cancellable", "conformance-delay", "conformance-failure"}
	for _, hdr := range [][]string{nil, {VersionHeader, "2.0"}} {
		r := call(t, http.MethodGet, it.url+"/.well-known/openwop", "", "", hdr...)
		if r.status != http.StatusOK || !slices.Equal(r.body["fixtures"].([]any), want) {
			t.Fatalf("%v: %d %s", hdr, r.status, r.raw)
		}
	}
}

// TestIntegrationIdempotencyKey: createRun with an Idempotency-Key starts
// at most one run per tenant, workflow and key: the retry (its key bare or
// quoted, its inputs in another order) answers the same run; the key with
// other inputs is 422 naming the reuse; another tenant's key is its own;
// a key that is no printable ASCII string is 400.
func TestIntegrationIdempotencyKey(t *testing.T) {
	it := newIntegration(t)
	create := func(key, tenantKey, inputs, idem string) response {
		return call(t, http.MethodPost, it.url+"/runs", tenantKey,
			fmt.Sprintf(`{"workflowId":"conformance-delay","inputs":%s}`, inputs), "Idempotency-Key", idem)
	}
	first := create("", keyA, `{"delayMs":30000}`, "order-1")
	if first.status != http.StatusCreated {
		t.Fatalf("first = %d %s", first.status, first.raw)
	}
	id := first.body["runId"]
	for _, tc := range []struct {
		name, key, inputs, idem string
		status                  int
		same                    bool
		code                    string
	}{
		{"retry", keyA, `{"delayMs":30000}`, "order-1", http.StatusCreated, true, ""},
		{"retry with a quoted key", keyA, `{ "delayMs" : 30000 }`, `"order-1"`, http.StatusCreated, true, ""},
		{"other inputs", keyA, `{"delayMs":1}`, "order-1", http.StatusUnprocessableEntity, false, "idempotency_key_reused"},
		{"another tenant", keyB, `{"delayMs":30000}`, "order-1", http.StatusCreated, false, ""},
		{"another key", keyA, `{"delayMs":30000}`, "order-2", http.StatusCreated, false, ""},
		{"not printable", keyA, `{"delayMs":30000}`, "é", http.StatusBadRequest, false, "validation_error"},
	} {
		r := create("", tc.key, tc.inputs, tc.idem)
		if r.status != tc.status || (r.body["runId"] == id) != tc.same {
			t.Errorf("%s: %d %s (first run %v)", tc.name, r.status, r.raw, id)
		}
		if tc.code != "" && r.body["code"] != tc.code && !strings.Contains(string(r.raw), tc.code) {
			t.Errorf("%s: %s, want code %s", tc.name, r.raw, tc.code)
		}
	}
}
