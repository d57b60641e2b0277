package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
)

func newEnv(t *testing.T, opts ActivityOptions) (*testsuite.TestActivityEnvironment, *Activities) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a := NewActivities(nil, opts)
	env.RegisterActivity(a.Sleep)
	env.RegisterActivity(a.GenerateReport)
	env.RegisterActivity(a.PublishReport)
	return env, a
}

func TestSleep(t *testing.T) {
	tests := []struct {
		name      string
		millis    int64
		heartbeat any // details of a previous attempt
		wantErr   string
		minTime   time.Duration
		maxTime   time.Duration
	}{
		{name: "sleeps", millis: 200, minTime: 200 * time.Millisecond, maxTime: 2 * time.Second},
		{name: "zero", millis: 0, maxTime: time.Second},
		{name: "resumes from the last heartbeat", millis: 60_000, heartbeat: int64(59_900), maxTime: 2 * time.Second},
		{name: "negative", millis: -1, wantErr: "negative duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, a := newEnv(t, ActivityOptions{HeartbeatInterval: 20 * time.Millisecond})
			if tc.heartbeat != nil {
				env.SetHeartbeatDetails(tc.heartbeat)
			}
			begin := time.Now()
			v, err := env.ExecuteActivity(a.Sleep, SleepInput{Millis: tc.millis})
			took := time.Since(begin)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var res SleepResult
			if err := v.Get(&res); err != nil || res.SleptMillis != tc.millis {
				t.Errorf("result %+v, %v", res, err)
			}
			if took < tc.minTime || took > tc.maxTime {
				t.Errorf("took %v, want between %v and %v", took, tc.minTime, tc.maxTime)
			}
		})
	}
}

func TestGenerateAndPublishReport(t *testing.T) {
	dir := t.TempDir()
	for _, out := range []string{"", filepath.Join(dir, "reports")} {
		env, a := newEnv(t, ActivityOptions{OutputDir: out, SectionDelay: time.Millisecond})
		v, err := env.ExecuteActivity(a.GenerateReport, ReportRequest{Title: "Q3", Topic: "sales", Sections: 3})
		if err != nil {
			t.Fatal(err)
		}
		var rep Report
		if err := v.Get(&rep); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(rep.ID, "rpt-") || rep.Sections != 3 || !strings.Contains(rep.Body, "## Section 3") {
			t.Fatalf("report = %+v", rep)
		}
		again, err := env.ExecuteActivity(a.GenerateReport, ReportRequest{Title: "Q3", Topic: "sales", Sections: 3})
		var rep2 Report
		if err != nil || again.Get(&rep2) != nil || rep2.ID != rep.ID {
			t.Errorf("a retried generation got id %q, want %q (%v)", rep2.ID, rep.ID, err)
		}
		v, err = env.ExecuteActivity(a.PublishReport, rep)
		if err != nil {
			t.Fatal(err)
		}
		var pub Publication
		if err := v.Get(&pub); err != nil {
			t.Fatal(err)
		}
		if out == "" {
			body, ok := a.Published(rep.ID)
			if pub.Location != "memory://"+rep.ID || !ok || body != rep.Body {
				t.Errorf("in-memory publication %+v, %v", pub, ok)
			}
			continue
		}
		body, err := os.ReadFile(pub.Location)
		if err != nil || string(body) != rep.Body || filepath.Dir(pub.Location) != out {
			t.Errorf("file publication %+v: %v", pub, err)
		}
	}
}

func TestActivityInputErrors(t *testing.T) {
	env, a := newEnv(t, ActivityOptions{})
	if _, err := env.ExecuteActivity(a.GenerateReport, ReportRequest{Title: " "}); err == nil || !strings.Contains(err.Error(), "empty title") {
		t.Errorf("empty title: %v", err)
	}
	for _, id := range []string{"", "../x", "a/b", ".."} {
		if _, err := env.ExecuteActivity(a.PublishReport, Report{ID: id}); err == nil || !strings.Contains(err.Error(), "invalid report id") {
			t.Errorf("id %q: %v", id, err)
		}
	}
}
