package admission

import (
	"cmp"
	"fmt"
	"math"
	"sync"
	"time"
)

// Defaults of Options.
const (
	// DefaultMaxStarts bounds the run starts in progress at once.
	DefaultMaxStarts = 512
	// DefaultMaxWaiting bounds the blocking calls waiting for their runs.
	DefaultMaxWaiting = 1024
	// DefaultTenantMax bounds one tenant's starts in progress and blocking
	// calls waiting, together.
	DefaultTenantMax = 256
	// DefaultRetryAfter is the pause a refused caller is told to take.
	DefaultRetryAfter = time.Second
)

// Reasons of a Rejection, also passed to Options.OnReject.
const (
	// ReasonStarts: MaxStarts run starts are in progress.
	ReasonStarts = "starts"
	// ReasonWaiting: MaxWaiting blocking calls are waiting.
	ReasonWaiting = "waiting"
	// ReasonTenant: the tenant holds TenantMax slots.
	ReasonTenant = "tenant"
)

// Options configure a Controller. Zero fields take the defaults.
type Options struct {
	// MaxStarts bounds the run starts in progress at once, all tenants
	// together (DefaultMaxStarts when 0).
	MaxStarts int
	// MaxWaiting bounds the blocking calls (calls that wait for their run
	// to end) waiting at once, all tenants together (DefaultMaxWaiting
	// when 0).
	MaxWaiting int
	// TenantMax bounds the calls of one tenant that hold a start or a
	// waiting slot (DefaultTenantMax when 0).
	TenantMax int
	// RetryAfter is the pause a refused caller is told to take
	// (DefaultRetryAfter when 0).
	RetryAfter time.Duration
	// OnReject, when set, is called for every refusal with the tenant and
	// the reason (ReasonStarts, ReasonWaiting or ReasonTenant), e.g. to
	// count them. It must not block.
	OnReject func(tenant, reason string)
}

// Need says what a call needs: NeedStart for a call that starts a run,
// NeedWait for one that then waits for the run to end (a blocking call),
// both for a blocking call that starts its run.
type Need uint8

// Needs of a call.
const (
	NeedStart Need = 1 << iota
	NeedWait
)

// Controller admits calls within its limits. It is safe for concurrent
// use. A nil *Controller admits everything.
type Controller struct {
	opts Options

	mu      sync.Mutex
	starts  int
	waiting int
	tenants map[string]int
}

// New returns a Controller. It fails on a negative limit.
func New(opts Options) (*Controller, error) {
	if opts.MaxStarts < 0 || opts.MaxWaiting < 0 || opts.TenantMax < 0 || opts.RetryAfter < 0 {
		return nil, fmt.Errorf("admission: negative limit in %+v", opts)
	}
	opts.MaxStarts = cmp.Or(opts.MaxStarts, DefaultMaxStarts)
	opts.MaxWaiting = cmp.Or(opts.MaxWaiting, DefaultMaxWaiting)
	opts.TenantMax = cmp.Or(opts.TenantMax, DefaultTenantMax)
	opts.RetryAfter = cmp.Or(opts.RetryAfter, DefaultRetryAfter)
	return &Controller{opts: opts, tenants: map[string]int{}}, nil
}

// Rejection is the error of a refused call: the server is at a limit and
// nothing was done; the caller should retry after RetryAfter.
type Rejection struct {
	// Tenant is the refused caller's tenant.
	Tenant string
	// Reason is ReasonStarts, ReasonWaiting or ReasonTenant.
	Reason string
	// Limit is the limit that was reached.
	Limit int
	// RetryAfter is the pause the caller should take before retrying.
	RetryAfter time.Duration
}

// Error says which limit was reached and when to retry.
func (r *Rejection) Error() string {
	var what string
	switch r.Reason {
	case ReasonStarts:
		what = fmt.Sprintf("%d runs are starting already (the limit)", r.Limit)
	case ReasonWaiting:
		what = fmt.Sprintf("%d calls are waiting for their runs already (the limit)", r.Limit)
	default:
		what = fmt.Sprintf("tenant %q has %d calls in progress already (its limit)", r.Tenant, r.Limit)
	}
	return fmt.Sprintf("server overloaded: %s; nothing was started: retry after %d s", what, r.RetryAfterSeconds())
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up, at least
// one (the unit of the HTTP Retry-After header).
func (r *Rejection) RetryAfterSeconds() int {
	return max(1, int(math.Ceil(r.RetryAfter.Seconds())))
}

// Ticket holds the slots an admitted call took. Release them with Started
// and Done. A nil *Ticket (from a nil Controller) does nothing.
type Ticket struct {
	c      *Controller
	tenant string

	mu   sync.Mutex
	need Need // the slots still held
}

// Admit takes the slots need names, and one of the tenant's, or none at
// all: when a limit is reached it returns a *Rejection (and calls
// Options.OnReject). A nil Controller admits everything with a nil Ticket.
func (c *Controller) Admit(tenant string, need Need) (*Ticket, error) {
	if c == nil {
		return nil, nil
	}
	if need&(NeedStart|NeedWait) == 0 {
		return nil, fmt.Errorf("admission: Admit needs NeedStart, NeedWait or both")
	}
	c.mu.Lock()
	var rej *Rejection
	switch {
	case need&NeedStart != 0 && c.starts >= c.opts.MaxStarts:
		rej = &Rejection{Reason: ReasonStarts, Limit: c.opts.MaxStarts}
	case need&NeedWait != 0 && c.waiting >= c.opts.MaxWaiting:
		rej = &Rejection{Reason: ReasonWaiting, Limit: c.opts.MaxWaiting}
	case c.tenants[tenant] >= c.opts.TenantMax:
		rej = &Rejection{Reason: ReasonTenant, Limit: c.opts.TenantMax}
	default:
		if need&NeedStart != 0 {
			c.starts++
		}
		if need&NeedWait != 0 {
			c.waiting++
		}
		c.tenants[tenant]++
	}
	c.mu.Unlock()
	if rej != nil {
		rej.Tenant, rej.RetryAfter = tenant, c.opts.RetryAfter
		if c.opts.OnReject != nil {
			c.opts.OnReject(tenant, rej.Reason)
		}
		return nil, rej
	}
	return &Ticket{c: c, tenant: tenant, need: need}, nil
}

// Stats are a Controller's counts at one moment.
type Stats struct {
	// Starts and Waiting are the start and waiting slots held.
	Starts, Waiting int
	// Tenants is the number of tenants holding a slot.
	Tenants int
}

// Stats returns the counts now (zero for a nil Controller).
func (c *Controller) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Starts: c.starts, Waiting: c.waiting, Tenants: len(c.tenants)}
}

// Started releases the ticket's start slot: the run's start call
// returned. A blocking call keeps its waiting slot (and its tenant's) until
// Done.
func (t *Ticket) Started() { t.release(NeedStart) }

// Done releases every slot the ticket still holds. Calling it again does
// nothing.
func (t *Ticket) Done() { t.release(NeedStart | NeedWait) }

func (t *Ticket) release(what Need) {
	if t == nil {
		return
	}
	t.mu.Lock()
	drop := t.need & what
	t.need &^= what
	remaining := t.need
	t.mu.Unlock()
	if drop == 0 {
		return
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if drop&NeedStart != 0 {
		c.starts--
	}
	if drop&NeedWait != 0 {
		c.waiting--
	}
	if remaining == 0 {
		if c.tenants[t.tenant]--; c.tenants[t.tenant] <= 0 {
			delete(c.tenants, t.tenant)
		}
	}
}
