package catalog

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
)

// pubOf is a publication of one tool named "t" with the given description
// by worker id on queue, of version v ("" for an unversioned worker; else
// "deployment.build").
func pubOf(id, queue, v, description string) signals.Publication {
	pub := signals.Publication{TaskQueue: queue, Identity: id, Tools: []signals.ToolSpec{{
		Name: "t", Description: description, InputSchema: json.RawMessage(`{"type":"object"}`), TaskQueue: queue,
	}}}
	if d, b, ok := strings.Cut(v, "."); ok {
		pub.Version = &signals.DeploymentVersion{DeploymentName: d, BuildID: b}
	}
	return pub
}

// renamed is pub with its one tool named name.
func renamed(pub signals.Publication, name string) signals.Publication {
	pub.Tools[0].Name = name
	return pub
}

// TestRollout: which two live publications may give one tool different
// specs when a worker publishes (Publish's conflict check).
func TestRollout(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b signals.Publication
		want bool
	}{
		{"two unversioned workers", pubOf("a", "q", "", "A"), pubOf("b", "q", "", "B"), false},
		{"one deployment, two versions", pubOf("a", "q", "d.v1", "A"), pubOf("b", "q", "d.v2", "B"), true},
		{"one deployment, two versions on two queues", pubOf("a", "q", "d.v1", "A"), pubOf("b", "q2", "d.v2", "B"), true},
		{"one version, two workers", pubOf("a", "q", "d.v1", "A"), pubOf("b", "q", "d.v1", "B"), false},
		{"two deployments", pubOf("a", "q", "d.v1", "A"), pubOf("b", "q", "e.v1", "B"), false},
		{"unversioned beside versioned, one queue", pubOf("a", "q", "", "A"), pubOf("b", "q", "d.v1", "B"), true},
		{"versioned beside unversioned, one queue", pubOf("a", "q", "d.v1", "A"), pubOf("b", "q", "", "B"), true},
		{"unversioned beside versioned, two queues", pubOf("a", "q", "", "A"), pubOf("b", "q2", "d.v1", "B"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rollout(tc.a, tc.b); got != tc.want {
				t.Errorf("rollout = %t, want %t", got, tc.want)
			}
			if got := rollout(tc.b, tc.a); got != tc.want {
				t.Errorf("rollout, the other way round = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestVersionedConflictRules: the tool the catalog lists when publications
// of several versions are live, as Temporal routes the tool's new runs
// (docs/catalog.md#versions).
func TestVersionedConflictRules(t *testing.T) {
	type pub struct {
		p    signals.Publication
		dead bool
		// closed: the publication closed a minute ago (its worker stopped).
		closed bool
	}
	current := func(build string) routing { return routing{known: true, current: build} }
	for _, tc := range []struct {
		name   string
		pubs   []pub
		routes map[string]routing
		// want is the listed tool's description, or "" when the tool is
		// unavailable with a reason containing wantWhy.
		want, wantWhy string
		// served are the identities whose publications Confirm checks.
		served []string
		// others are the descriptions of OtherVersions.
		others []string
	}{
		{name: "one deployment, two versions: the current one (v2)",
			pubs:   []pub{{p: pubOf("w1", "q", "d.v1", "A")}, {p: pubOf("w2", "q", "d.v2", "B")}},
			routes: map[string]routing{"d": current("v2")}, want: "B", served: []string{"w2"}, others: []string{"A"}},
		{name: "one deployment, two versions: the current one (v1)",
			pubs:   []pub{{p: pubOf("w1", "q", "d.v1", "A")}, {p: pubOf("w2", "q", "d.v2", "B")}},
			routes: map[string]routing{"d": current("v1")}, want: "A", served: []string{"w1"}, others: []string{"B"}},
		{name: "one deployment: an older version drained and stopped",
			pubs:   []pub{{p: pubOf("w1", "q", "d.v1", "A"), closed: true}, {p: pubOf("w2", "q", "d.v2", "B")}},
			routes: map[string]routing{"d": current("v2")}, want: "B", served: []string{"w2"}, others: []string{"A"}},
		{name: "one deployment: an older version's worker crashed (its publication runs on)",
			pubs:   []pub{{p: pubOf("w1", "q", "d.v1", "A"), dead: true}, {p: pubOf("w2", "q", "d.v2", "B")}},
			routes: map[string]routing{"d": current("v2")}, want: "B", served: []string{"w2"}, others: []string{"A"}},
		{name: "one deployment: no live worker of the current version",
			pubs:   []pub{{p: pubOf("w1", "q", "d.v1", "A")}, {p: pubOf("w2", "q", "d.v2", "B"), dead: true}},
			routes: map[string]routing{"d": current("v2")}, wantWhy: `no live worker of version "v2", the current version of worker deployment "d"`},
		{name: "a tool the current version no longer serves",
			pubs:   []pub{{p: pubOf("w1", "q", "d.v1", "A")}, {p: renamed(pubOf("w2", "q", "d.v2", "B"), "u")}},
			routes: map[string]routing{"d": current("v2")}, wantWhy: `no live worker of version "v2", the current version of worker deployment "d", serves the tool`},
		{name: "a tool only a version not yet current serves",
			pubs:   []pub{{p: renamed(pubOf("w1", "q", "d.v1", "A"), "u")}, {p: pubOf("w2", "q", "d.v2", "B")}},
			routes: map[string]routing{"d": current("v1")}, wantWhy: `(live versions: "v2")`},
		{name: "one deployment without a current version",
			pubs:   []pub{{p: pubOf("w1", "q", "d.v1", "A")}},
			routes: map[string]routing{"d": {known: true}}, wantWhy: `worker deployment "d" has no current version`},
		{name: "one deployment, routing unknown: versions must agree",
			pubs:   []pub{{p: pubOf("w1", "q", "d.v1", "A")}, {p: pubOf("w2", "q", "d.v2", "B")}},
			routes: map[string]routing{"d": {}}, wantWhy: "different specs"},
		{name: "two deployments with different specs conflict",
			pubs:   []pub{{p: pubOf("w1", "q", "d.v1", "A")}, {p: pubOf("w2", "q", "e.v1", "B")}},
			routes: map[string]routing{"d": current("v1"), "e": current("v1")}, wantWhy: "different specs"},
		{name: "two deployments with one spec",
			pubs:   []pub{{p: pubOf("w1", "q", "d.v1", "A")}, {p: pubOf("w2", "q", "e.v1", "A")}},
			routes: map[string]routing{"d": current("v1"), "e": current("v1")}, want: "A", served: []string{"w1", "w2"}},
		{name: "unversioned beside a current version: the version",
			pubs:   []pub{{p: pubOf("w0", "q", "", "A")}, {p: pubOf("w1", "q", "d.v1", "B")}},
			routes: map[string]routing{"d": current("v1")}, want: "B", served: []string{"w1"}},
		{name: "unversioned beside a version not yet current: the unversioned",
			pubs:   []pub{{p: pubOf("w0", "q", "", "A")}, {p: pubOf("w1", "q", "d.v1", "B")}},
			routes: map[string]routing{"d": {known: true}}, want: "A", served: []string{"w0"}, others: []string{"B"}},
		{name: "unversioned beside a current version whose workers are gone",
			pubs:   []pub{{p: pubOf("w0", "q", "", "A")}, {p: pubOf("w1", "q", "d.v1", "B"), dead: true}},
			routes: map[string]routing{"d": current("v1")}, wantWhy: `no live worker of version "v1"`},
		{name: "unversioned beside versioned on another queue conflict",
			pubs:   []pub{{p: pubOf("w0", "q", "", "A")}, {p: pubOf("w1", "q2", "d.v1", "A")}},
			routes: map[string]routing{"d": current("v1")}, wantWhy: "different specs (taskQueue differ)"},
		{name: "two unversioned workers with different specs conflict",
			pubs:    []pub{{p: pubOf("w0", "q", "", "A")}, {p: pubOf("w1", "q", "", "B")}},
			wantWhy: "different specs (description differ)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pubs []rampPub
			for _, p := range tc.pubs {
				state := "live"
				switch {
				case p.closed:
					state = "closed"
				case p.dead:
					state = "dead"
				}
				pubs = append(pubs, rampPub{p.p, state})
			}
			checkView(t, liveOf(t, pubs, tc.routes, nil).view, tc.want, tc.wantWhy, tc.served, tc.others)
		})
	}
}

// checkView checks the tool "t" of a view: listed with the description
// want, or unavailable for a reason containing wantWhy; the identities of
// the publications Confirm checks (served) and the descriptions of
// OtherVersions (others).
func checkView(t *testing.T, v *view, want, wantWhy string, served, others []string) {
	t.Helper()
	tool, unav := v.byKey["t"], v.unav["t"]
	switch {
	case want != "" && tool == nil:
		t.Fatalf("tool unavailable (%v), want it listed with %q", unav, want)
	case want != "" && tool.Spec().Description != want:
		t.Fatalf("listed %q, want %q", tool.Spec().Description, want)
	case want == "" && (unav == nil || !strings.Contains(unav.Reason, wantWhy)):
		t.Fatalf("tool %v, unavailable %v; want unavailable for %q", tool, unav, wantWhy)
	}
	var gotServed []string
	for _, p := range v.served["t"] {
		gotServed = append(gotServed, p.pub.Identity)
	}
	if strings.Join(gotServed, ",") != strings.Join(served, ",") {
		t.Errorf("served by %v, want %v", gotServed, served)
	}
	var gotOthers []string
	for _, o := range v.others["t"] {
		gotOthers = append(gotOthers, o.Spec().Description)
	}
	if strings.Join(gotOthers, ",") != strings.Join(others, ",") {
		t.Errorf("other versions %v, want %v", gotOthers, others)
	}
}

// liveOf is a Live whose view is built from pubs (each live, dead or
// closed a minute ago) and routes, and whose draws are draws in turn.
func liveOf(t *testing.T, pubs []rampPub, routes map[string]routing, draws []float64) *Live {
	t.Helper()
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	next := 0
	l := &Live{opts: LiveOptions{LiveWindow: time.Minute, Now: func() time.Time { return now }, Rand: func() float64 {
		if next >= len(draws) {
			t.Fatal("more draws than the test gave")
		}
		next++
		return draws[next-1]
	}}, log: zap.NewNop(), reported: map[string]bool{}, compiled: map[string]*Tool{}}
	signs := workerSigns{beats: map[workerKey]beat{}}
	var ls []listed
	for _, p := range pubs {
		ls = append(ls, listed{workflowID: signals.PublicationID(p.p.TaskQueue, p.p.Identity), pub: p.p})
		switch p.state {
		case "closed":
			ls[len(ls)-1].closed = now.Add(-time.Minute)
		case "live":
			signs.beats[workerKey{p.p.TaskQueue, p.p.Identity}] = beat{at: now, interval: 3 * time.Second, running: true, publication: true}
		}
	}
	l.view = l.build(now, ls, signs, routes)
	return l
}

// rampPub is a publication of a liveOf and its worker's state: "live",
// "dead" (no longer polls) or "closed" (withdrawn).
type rampPub struct {
	p     signals.Publication
	state string
}

// chosen names the version a tool is pinned to and its spec: "v2:B", or
// ":A" when it is not pinned.
func chosen(t *Tool) string {
	v := ""
	if p := t.Pinned(); p != nil {
		v = p.BuildID
	}
	return v + ":" + t.Spec().Description
}

// TestRampRouting: while a Worker Deployment ramps a version, the catalog
// lists the current version's spec, and each call goes to the ramping
// version with the ramp's probability, to the current one otherwise,
// pinned to the version chosen (so Temporal's own ramp cannot pick the
// other); never to a ramping version none of whose workers is live.
func TestRampRouting(t *testing.T) {
	ramping := func(current, ramp string, percent float32) routing {
		return routing{known: true, current: current, ramping: ramp, percent: percent}
	}
	v1, v2 := rampPub{pubOf("w1", "q", "d.v1", "A"), "live"}, rampPub{pubOf("w2", "q", "d.v2", "B"), "live"}
	for _, tc := range []struct {
		name   string
		pubs   []rampPub
		routes map[string]routing
		draws  []float64
		// want is what each call chose (chosen), the first choice of
		// Route; then, when the call went to the ramping version, the
		// current version to fall back on.
		want []string
	}{
		{name: "ramp at 30%: draws under 0.3 go to the ramping version",
			pubs: []rampPub{v1, v2}, routes: map[string]routing{"d": ramping("v1", "v2", 30)},
			draws: []float64{0.1, 0.29, 0.3, 0.95}, want: []string{"v2:B v1:A", "v2:B v1:A", "v1:A", "v1:A"}},
		{name: "ramp at 100%", pubs: []rampPub{v1, v2}, routes: map[string]routing{"d": ramping("v1", "v2", 100)},
			draws: []float64{0.999}, want: []string{"v2:B v1:A"}},
		{name: "ramp paused at 0%: pinned to the current version", pubs: []rampPub{v1, v2},
			routes: map[string]routing{"d": ramping("v1", "v2", 0)}, draws: []float64{0}, want: []string{"v1:A"}},
		{name: "no worker of the ramping version live: never routed to it",
			pubs: []rampPub{v1, {v2.p, "dead"}}, routes: map[string]routing{"d": ramping("v1", "v2", 100)},
			want: []string{"v1:A"}},
		{name: "the ramping version's workers stopped: never routed to it",
			pubs: []rampPub{v1, {v2.p, "closed"}}, routes: map[string]routing{"d": ramping("v1", "v2", 100)},
			want: []string{"v1:A"}},
		{name: "workers of the ramping version disagree: never routed to it",
			pubs:   []rampPub{v1, v2, {pubOf("w3", "q", "d.v2", "C"), "live"}},
			routes: map[string]routing{"d": ramping("v1", "v2", 100)}, want: []string{"v1:A"}},
		{name: "no ramp: pinned to the current version", pubs: []rampPub{v1, v2},
			routes: map[string]routing{"d": {known: true, current: "v1"}}, want: []string{"v1:A"}},
		{name: "two deployments with one spec: Temporal routes",
			pubs:   []rampPub{v1, {pubOf("w3", "q", "e.v1", "A"), "live"}},
			routes: map[string]routing{"d": ramping("v1", "v2", 50), "e": {known: true, current: "v1"}}, draws: []float64{0}, want: []string{":A"}},
		{name: "routing unknown: Temporal routes", pubs: []rampPub{v1}, routes: map[string]routing{"d": {}}, want: []string{":A"}},
		{name: "a ramp to unversioned workers is not followed", pubs: []rampPub{v1},
			routes: map[string]routing{"d": {known: true, current: "v1", percent: 20, toUnversioned: true}}, want: []string{":A"}},
		{name: "a ramp from unversioned workers is not followed",
			pubs:   []rampPub{{pubOf("w0", "q", "", "A"), "live"}, v2},
			routes: map[string]routing{"d": {known: true, ramping: "v2", percent: 50}}, want: []string{":A"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := liveOf(t, tc.pubs, tc.routes, tc.draws)
			listed := l.view.byKey["t"]
			if listed == nil || listed.Spec().Description != "A" || listed.Pinned() != nil {
				t.Fatalf("listed %v (unavailable %v), want the current version's spec A, not pinned", listed, l.view.unav["t"])
			}
			for i, want := range tc.want {
				var got []string
				for _, c := range l.route(listed) {
					got = append(got, chosen(c))
				}
				if strings.Join(got, " ") != want {
					t.Errorf("call %d went to %v, want %s", i, got, want)
				}
			}
		})
	}
}

// TestRampForArguments: during a ramp, a call whose arguments fit only
// the other version's input schema goes to that version; arguments that
// fit neither stay with the version the ramp chose (and are refused
// against its schema).
func TestRampForArguments(t *testing.T) {
	withInput := func(p signals.Publication, field string) signals.Publication {
		p.Tools[0].InputSchema = json.RawMessage(`{"type":"object","required":["` + field + `"]}`)
		return p
	}
	pubs := []rampPub{{withInput(pubOf("w1", "q", "d.v1", "A"), "text"), "live"}, {withInput(pubOf("w2", "q", "d.v2", "B"), "note"), "live"}}
	routes := map[string]routing{"d": {known: true, current: "v1", ramping: "v2", percent: 50}}
	for _, tc := range []struct {
		name string
		draw float64
		args string
		want string
	}{
		{"the ramp chose v2, the arguments fit v2", 0.2, `{"note":"n"}`, "v2:B"},
		{"the ramp chose v2, the arguments fit v1 only", 0.2, `{"text":"t"}`, "v1:A"},
		{"the ramp chose v1, the arguments fit v2 only", 0.7, `{"note":"n"}`, "v2:B"},
		{"the ramp chose v1, the arguments fit both", 0.7, `{"note":"n","text":"t"}`, "v1:A"},
		{"the ramp chose v2, the arguments fit neither", 0.2, `{}`, "v2:B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := liveOf(t, pubs, routes, []float64{tc.draw})
			tool := l.route(l.view.byKey["t"])[0].ForArguments(json.RawMessage(tc.args))
			if got := chosen(tool); got != tc.want {
				t.Errorf("went to %s, want %s", got, tc.want)
			}
		})
	}
}
