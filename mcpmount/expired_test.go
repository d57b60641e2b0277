package mcpmount

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCompanionAnswerExpired: an answer through the companion tool to a
// question whose deadline passed (approve_expense's manager question,
// withdrawn when the director is asked) is refused naming the expiry, and
// resolves nothing: the director's question stays the only one open.
func TestCompanionAnswerExpired(t *testing.T) {
	s := newStack(t, keysFor(t, "ka=acme:urn:someone"), "")
	call := modernCompanion(s.client(t, "ka", map[string]any{}))
	m := regexp.MustCompile(`^Run (\S+) of approve_expense is waiting for an answer\. Question "([^"]+)"`).
		FindStringSubmatch(text(t, call(t, "approve_expense", map[string]any{"amount": 12, "purpose": "taxi",
			"escalateAfterSeconds": 1, "managers": []string{"urn:someone"}, "directors": []string{"urn:someone"}})))
	if m == nil {
		t.Fatal("the call did not hand its run over with its question")
	}
	run, manager := m[1], m[2]
	deadline := time.Now().Add(time.Minute)
	for {
		st := companionStatus(t, call(t, "openwop_run_status", map[string]any{"runId": run}))
		if len(st.Questions) == 1 && st.Questions[0].Key != manager {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the director was never asked: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	res := call(t, "openwop_run_answer", map[string]any{"runId": run, "key": manager, "content": map[string]any{"action": "accept"}})
	if res["isError"] != true || !strings.Contains(text(t, res), "expired") {
		t.Fatalf("the answer to the expired question = %v, want refused as expired", res)
	}
	st := companionStatus(t, call(t, "openwop_run_status", map[string]any{"runId": run}))
	if st.Status != "input_required" || len(st.Questions) != 1 || st.Questions[0].Key == manager {
		t.Fatalf("after the late answer: %+v, want only the director's question open", st)
	}
	call(t, "openwop_run_cancel", map[string]any{"runId": run})
}
