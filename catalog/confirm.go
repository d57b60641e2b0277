package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// ForCall implements Source: the tool is looked up, routed to the version
// the run is to start on (route), and confirmed still served (confirm),
// the next choice taken when the first is not.
func (l *Live) ForCall(ctx context.Context, name string) (*Tool, error) {
	t, err := l.Lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	for _, t := range l.route(t) {
		if err = l.confirm(ctx, t); err == nil {
			return t, nil
		}
	}
	return nil, err
}

// confirmFor is how long a publication confirmed running is taken as
// running without describing it again: calls that come together share
// one describe call, and a worker that begins to stop is refused new
// calls at most this long after it withdrew its publication.
const confirmFor = 200 * time.Millisecond

// StopGrace is how long a worker that stops cleanly keeps polling its
// task queue after it withdrew its publication, before it stops its
// Temporal worker (workflows.Registry.Run does; a hand-built worker
// should): the longest a server may still start a run for the withdrawn
// publication. A server starts a run right after it confirmed the
// publication running, and takes a confirmation as good for confirmFor
// (200 ms); the rest is margin for the start call itself. A run started
// in that window is then picked up by the stopping worker and drained with
// the runs in flight, instead of waiting in the task queue for a worker
// that is gone.
const StopGrace = time.Second

// confirm returns nil when t may be called now, and otherwise an
// *UnavailableError saying why: a reading of the catalog may be a few
// seconds old, and a worker that stops withdraws its publication first,
// so that from that moment no new run is started for it. A tool that
// only publications serve is confirmed by describing them (one call while the first still runs,
// shared by the calls that come together, none while one was confirmed
// within confirmFor), not by visibility,
// which may list a publication closed a moment ago as running. A tool
// whose publications all closed since the reading (their workers began to
// stop) is unavailable, and the next lookup reads the catalog again.
func (l *Live) confirm(ctx context.Context, t *Tool) error {
	name := t.Spec().Name
	l.mu.Lock()
	v := l.view
	l.mu.Unlock()
	if v == nil || len(v.served[name]) == 0 {
		return nil // a declared tool, or one the reading no longer lists
	}
	pubs := v.served[name]
	if r := v.ramps[name]; r != nil && t.pin != nil && *t.pin == r.ramping {
		pubs = r.served // a call sent to the ramping version
	}
	var last listed
	for _, p := range pubs {
		running, err := l.confirmRunning(ctx, p.pub)
		if err != nil {
			return fmt.Errorf("confirm tool %q: %w", name, err)
		}
		if running {
			return nil
		}
		last = p
	}
	l.mu.Lock()
	if l.view == v {
		l.view = &view{at: time.Time{}, tools: v.tools, byKey: v.byKey, unav: v.unav, served: v.served}
	}
	l.mu.Unlock()
	last.closed = l.opts.Now()
	u := withdrawn(name, last)
	u.Reason = fmt.Sprintf("no worker serves task queue %q any more (worker %q, the last that published the tool, is stopping and withdrew it); start a worker that serves it",
		last.pub.TaskQueue, last.pub.Identity)
	return u
}

// confirmRunning reports whether the publication still runs: at once when
// it was confirmed within confirmFor, otherwise by describing it.
func (l *Live) confirmRunning(ctx context.Context, pub signals.Publication) (bool, error) {
	id := signals.PublicationID(pub.TaskQueue, pub.Identity)
	l.mu.Lock()
	at, ok := l.confirmed[id]
	l.mu.Unlock()
	if ok && time.Since(at) < confirmFor {
		return true, nil
	}
	// Calls that come together share one describe call.
	v, err, _ := l.confirming.Do(id, func() (any, error) {
		info, err := describeRunning(ctx, l.c, pub)
		if err != nil {
			return false, err
		}
		l.noteConfirmed(id, info != nil)
		return info != nil, nil
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}

// noteConfirmed records whether the publication id runs, and forgets the
// confirmations no call asked about for a minute.
func (l *Live) noteConfirmed(id string, running bool) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !running {
		delete(l.confirmed, id)
		return
	}
	l.confirmed[id] = now
	for other, at := range l.confirmed {
		if now.Sub(at) > time.Minute {
			delete(l.confirmed, other)
		}
	}
}

// servedBy lists the publications of the live candidates of a tool, or
// nil when a live declaration serves it (it has no publication to check).
func servedBy(cands []candidate) []listed {
	var out []listed
	for _, c := range cands {
		if !c.live {
			continue
		}
		if c.pub == nil {
			return nil
		}
		out = append(out, *c.pub)
	}
	return out
}
