package mcpmount

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// These tests prove, on the wire against the embedded Temporal server,
// that a client that took no task is answered before its host gives up
// (docs/protocol.md, "Host limits"), and that it finds its runs again.

// elicitationOnly are the capabilities of a client that answers questions
// by elicitation but takes no task.
var elicitationOnly = map[string]any{"elicitation": map[string]any{}}

// TestHandoffBeforeHostLimit: a client that took no task, whose run
// outlasts the deployment's short bound, gets its handoff at the bound
// (not an error, not the result after the host gave up), whether it
// declared nothing or elicitation alone; its later disconnect leaves the
// run alone, and it finishes the run through the companion tools it is
// listed.
func TestHandoffBeforeHostLimit(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, func(o *Options) { o.MaxBlockingWait = 2 * time.Second }))
	for _, tc := range []struct {
		name string
		caps map[string]any
	}{{"declared nothing", map[string]any{}}, {"elicitation only", elicitationOnly}} {
		t.Run(tc.name, func(t *testing.T) {
			c := s.client(t, "", tc.caps)
			if names := strings.Join(toolNames(wantResult(t, c.call("tools/list", nil, nil))), ","); !strings.Contains(names, companionTools) {
				t.Fatalf("tools/list = %s, want the companion tools", names)
			}
			conn := dialCall(t, s.addr(), toolCall(1, "slow_compute", map[string]any{"seconds": 6, "label": tc.name}, tc.caps, acceptSSE))
			res := wantResult(t, readRPC(t, conn))
			id := p.next(t)
			conn.Close() // the host goes away after the handoff
			body := text(t, res)
			m := regexp.MustCompile(`^Run (\S+) of slow_compute is still working`).FindStringSubmatch(body)
			if m == nil || m[1] != id || !strings.Contains(body, "must not be repeated") || !strings.Contains(body, "openwop_run_status") {
				t.Fatalf("answer at the bound = %v (run %s)", res, id)
			}
			follow := modernCompanion(c)
			for turn := 0; ; turn++ {
				// waitSeconds is bounded by the 2 s bound: wait in turns.
				st := companionStatus(t, follow(t, "openwop_run_status", map[string]any{"runId": id, "waitSeconds": 30}))
				if st.Status == "completed" {
					if st.Result == nil || st.Next != "nothing: the run is over." {
						t.Fatalf("status of the completed run = %+v", st)
					}
					break
				}
				if st.Status != "working" || turn == 30 {
					t.Fatalf("status after the handoff = %+v", st)
				}
			}
			if snap, err := s.runs.Get(context.Background(), auth.Anonymous(), id); err != nil || snap.Status != signals.StatusCompleted || snap.CancelReason != "" {
				t.Fatalf("run after the handoff and the disconnect = %+v, %v; want completed", snap, err)
			}
		})
	}
}

// TestHandoffDropBeforeBound: a client that took no task and goes away
// before the bound still owns its run, which is cancelled (RFC 0198),
// whether it declared nothing or elicitation alone.
func TestHandoffDropBeforeBound(t *testing.T) {
	var p *probe
	s := newStackWith(t, nil, "", withProbe(&p, func(o *Options) { o.MaxBlockingWait = 10 * time.Minute }))
	for _, tc := range []struct {
		name string
		caps map[string]any
	}{{"declared nothing", map[string]any{}}, {"elicitation only", elicitationOnly}} {
		t.Run(tc.name, func(t *testing.T) {
			conn := dialCall(t, s.addr(), toolCall(1, "slow_compute", map[string]any{"seconds": 60, "label": tc.name}, tc.caps, acceptSSE))
			id := p.next(t)
			s.awaitActivityStarted(t, id)
			conn.Close()
			wantCancelledByRequest(t, s.awaitEnd(t, auth.Anonymous(), id, 30*time.Second))
		})
	}
}

// TestHandoffToolBound: a tool's own bound (signals.ToolSpec.HandoffAfter,
// workflows.WithHandoffAfter) hands its call over before the server's.
func TestHandoffToolBound(t *testing.T) {
	spec := signals.ToolSpec{Name: "long", Description: "never ends", TaskSupport: signals.TaskOptional,
		HandoffAfter: signals.Duration(100 * time.Millisecond)}
	s := newTestServer(t, func(o *Options) {
		o.Catalog = staticCatalog(t, spec)
		o.MaxBlockingWait = 10 * time.Minute
	})
	begin := time.Now()
	res := wantResult(t, s.client(t, map[string]any{}).call("tools/call", map[string]any{"name": "long", "arguments": map[string]any{}}, nil))
	if !strings.Contains(text(t, res), "of long is still working") || time.Since(begin) > 5*time.Minute {
		t.Fatalf("call of a tool with a 100 ms bound = %v after %v", res, time.Since(begin))
	}
}

// runListPage is the structured content of openwop_run_list.
type runListPage struct {
	Runs []struct {
		RunID  string `json:"runId"`
		TaskID string `json:"taskId"`
		Tool   string `json:"tool"`
		Status string `json:"status"`
	} `json:"runs"`
	NextCursor string `json:"nextCursor"`
}

func listedRuns(t *testing.T, res map[string]any) runListPage {
	t.Helper()
	raw, _ := json.Marshal(res["structuredContent"])
	var page runListPage
	if err := json.Unmarshal(raw, &page); err != nil || res["isError"] == true {
		t.Fatalf("openwop_run_list = %v (%v)", res, err)
	}
	return page
}

// TestRunListFindsForgottenRun: a run its caller started as a task and
// forgot is found again through openwop_run_list (listed to a Tasks
// client too) by tool, status and page, with its runId and taskId; it
// lists what GET /runs lists: not to another tenant, whose cursor of the
// caller's listing is refused. The tenants are the test's own, since
// other tests' runs share the Temporal server.
func TestRunListFindsForgottenRun(t *testing.T) {
	acme, globex := testenv.UniqueID("acme-"), testenv.UniqueID("globex-")
	s := newStack(t, keysFor(t, "ka="+acme+":alice,kb="+globex+":bob,kc="+acme+":carol"), "")
	alice := s.client(t, "ka", tasksCaps())
	if names := strings.Join(toolNames(wantResult(t, alice.call("tools/list", nil, nil))), ","); !strings.HasSuffix(names, ",openwop_run_list") ||
		strings.Contains(names, "openwop_run_status") {
		t.Fatalf("tools/list of a Tasks client = %s, want openwop_run_list alone of the companion tools", names)
	}
	alice0 := signals.Subject{Tenant: acme, SubjectID: "alice"}
	var ids []string
	// One after the other: GET /runs orders closed runs by their end.
	for _, label := range []string{"first", "second"} {
		created := callTool(t, alice, "slow_compute", map[string]any{"seconds": 1, "label": label})
		taskID, ok := created["taskId"].(string)
		if !ok {
			t.Fatalf("call as a task = %v", created)
		}
		ids = append(ids, runOf(t, taskID))
		s.awaitEnd(t, alice0, ids[len(ids)-1], 30*time.Second)
	}
	args := map[string]any{"tool": "slow_compute", "status": "completed", "limit": 1}
	// Visibility may lag the runs' ends: list until both are there.
	var first, second runListPage
	for turn := 0; ; turn++ {
		first = listedRuns(t, callTool(t, alice, "openwop_run_list", args))
		if len(first.Runs) == 1 && first.NextCursor != "" {
			second = listedRuns(t, callTool(t, alice, "openwop_run_list", map[string]any{"tool": "slow_compute", "status": "completed", "limit": 1, "cursor": first.NextCursor}))
			if len(second.Runs) == 1 {
				break
			}
		}
		if turn == 100 {
			t.Fatalf("alice's runs not listed: %+v, %+v", first, second)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Newest first.
	if first.Runs[0].RunID != ids[1] || second.Runs[0].RunID != ids[0] {
		t.Fatalf("pages = %+v, %+v; want %s then %s", first, second, ids[1], ids[0])
	}
	for _, r := range append(first.Runs, second.Runs...) {
		if r.TaskID != runid.Project(r.RunID) || r.Tool != "slow_compute" || r.Status != "completed" {
			t.Fatalf("entry = %+v", r)
		}
	}
	if got := listedRuns(t, callTool(t, alice, "openwop_run_list", map[string]any{"tool": "slow_compute", "status": "running"})); len(got.Runs) != 0 {
		t.Fatalf("running runs of slow_compute = %+v, want none", got)
	}
	bob := s.client(t, "kb", map[string]any{})
	if got := listedRuns(t, callTool(t, bob, "openwop_run_list", map[string]any{})); len(got.Runs) != 0 {
		t.Fatalf("bob (tenant globex) lists %+v, want none of alice's", got)
	}
	// Carol, of alice's tenant, lists her own runs (none) unless she asks
	// for everyone's, which GET /runs would show her too.
	carol := s.client(t, "kc", tasksCaps())
	if got := listedRuns(t, callTool(t, carol, "openwop_run_list", map[string]any{"tool": "slow_compute"})); len(got.Runs) != 0 {
		t.Fatalf("carol lists %+v, want none of alice's by default", got)
	}
	if got := listedRuns(t, callTool(t, carol, "openwop_run_list", map[string]any{"tool": "slow_compute", "everyone": true})); len(got.Runs) != 2 {
		t.Fatalf("carol lists %+v with everyone, want alice's two runs", got)
	}
	stolen := callTool(t, bob, "openwop_run_list", map[string]any{"tool": "slow_compute", "status": "completed", "limit": 1, "cursor": first.NextCursor})
	if stolen["isError"] != true || !strings.Contains(text(t, stolen), "cursor") {
		t.Fatalf("bob with alice's cursor = %v", stolen)
	}
	for _, args := range []map[string]any{{"status": "sleeping"}, {"tool": "x' OR 'a'='a"}, {"limit": 0}, {"cursor": "not-one"}} {
		bad := callTool(t, alice, "openwop_run_list", args)
		if bad["isError"] != true || bad["structuredContent"] != nil {
			t.Fatalf("openwop_run_list with %v = %v, want a refusal", args, bad)
		}
		for k := range args {
			if !strings.Contains(text(t, bad), k) {
				t.Fatalf("openwop_run_list with %v = %q, want the refusal to name %s", args, text(t, bad), k)
			}
		}
	}
}

// TestRunListOff: Options.NoRunListTool takes openwop_run_list out of
// tools/list, and a call of it is an unknown tool.
func TestRunListOff(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.NoRunListTool = true })
	c := s.client(t, map[string]any{})
	if names := strings.Join(toolNames(wantResult(t, c.call("tools/list", nil, nil))), ","); strings.Contains(names, "openwop_run_list") {
		t.Fatalf("tools/list = %s", names)
	}
	wantError(t, c.call("tools/call", map[string]any{"name": "openwop_run_list", "arguments": map[string]any{}}, nil), 400, -32602)
}
