package admission

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestAdmit takes and releases slots in sequence and checks each answer:
// the global bounds, the tenant's share, and that releases free them.
func TestAdmit(t *testing.T) {
	type step struct {
		tenant string
		need   Need
		reason string // "" admitted
		// release, when >= 0, releases the ticket of that earlier step
		// (Started when started is set, else Done) instead of admitting.
		release int
		started bool
	}
	admit := func(tenant string, need Need, reason string) step {
		return step{tenant: tenant, need: need, reason: reason, release: -1}
	}
	done := func(i int) step { return step{release: i} }
	started := func(i int) step { return step{release: i, started: true} }
	tests := []struct {
		name   string
		limits Options
		steps  []step
	}{
		{"starts bound", Options{MaxStarts: 2, TenantMax: 10}, []step{
			admit("a", NeedStart, ""), admit("b", NeedStart, ""), admit("c", NeedStart, ReasonStarts),
			started(0), admit("c", NeedStart, ""),
		}},
		{"waiting bound, tasks still admitted", Options{MaxWaiting: 1, TenantMax: 10}, []step{
			admit("a", NeedStart|NeedWait, ""), admit("b", NeedStart|NeedWait, ReasonWaiting),
			admit("b", NeedStart, ""), admit("b", NeedWait, ReasonWaiting),
			started(0), admit("b", NeedWait, ReasonWaiting), done(0), admit("b", NeedWait, ""),
		}},
		{"tenant share", Options{TenantMax: 2}, []step{
			admit("a", NeedStart, ""), admit("a", NeedStart|NeedWait, ""), admit("a", NeedWait, ReasonTenant),
			admit("b", NeedStart, ""),
			// A blocking call keeps its tenant's slot after its start.
			started(1), admit("a", NeedStart, ReasonTenant), done(0), admit("a", NeedStart, ""),
		}},
		{"release twice", Options{MaxStarts: 1}, []step{
			admit("a", NeedStart, ""), done(0), done(0), admit("a", NeedStart, ""), admit("b", NeedStart, ReasonStarts),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rejected []string
			limits := tt.limits
			limits.OnReject = func(tenant, reason string) { rejected = append(rejected, tenant+":"+reason) }
			c, err := New(limits)
			if err != nil {
				t.Fatal(err)
			}
			tickets := make([]*Ticket, len(tt.steps))
			var want []string
			for i, s := range tt.steps {
				if s.release >= 0 {
					if s.started {
						tickets[s.release].Started()
					} else {
						tickets[s.release].Done()
					}
					continue
				}
				tk, err := c.Admit(s.tenant, s.need)
				var rej *Rejection
				switch {
				case s.reason == "" && err != nil:
					t.Fatalf("step %d: %v; want admitted", i, err)
				case s.reason != "" && (!errors.As(err, &rej) || rej.Reason != s.reason || rej.Tenant != s.tenant):
					t.Fatalf("step %d: %v; want a rejection for %s", i, err, s.reason)
				case s.reason != "":
					want = append(want, s.tenant+":"+s.reason)
				}
				tickets[i] = tk
			}
			if strings.Join(rejected, ",") != strings.Join(want, ",") {
				t.Fatalf("OnReject saw %v; want %v", rejected, want)
			}
			for _, tk := range tickets {
				tk.Done()
			}
			if s := c.Stats(); s != (Stats{}) {
				t.Fatalf("after every ticket is done: %+v", s)
			}
		})
	}
}

// TestRejectionSaysWhenToRetry: the message names the limit and the pause,
// and RetryAfterSeconds rounds up to whole seconds.
func TestRejectionSaysWhenToRetry(t *testing.T) {
	c, err := New(Options{MaxStarts: 1, RetryAfter: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admit("a", NeedStart); err != nil {
		t.Fatal(err)
	}
	_, err = c.Admit("b", NeedStart)
	var rej *Rejection
	if !errors.As(err, &rej) || rej.RetryAfterSeconds() != 2 || !strings.Contains(err.Error(), "retry after 2 s") ||
		!strings.Contains(err.Error(), "1 runs are starting") {
		t.Fatalf("rejection %v", err)
	}
}

// TestNilControllerAdmitsAll: no Controller, no limits.
func TestNilControllerAdmitsAll(t *testing.T) {
	var c *Controller
	tk, err := c.Admit("a", NeedStart|NeedWait)
	if err != nil {
		t.Fatal(err)
	}
	tk.Started()
	tk.Done()
}

// TestNewRefusesNegativeLimits.
func TestNewRefusesNegativeLimits(t *testing.T) {
	if _, err := New(Options{TenantMax: -1}); err == nil {
		t.Fatal("New accepted a negative limit")
	}
}
