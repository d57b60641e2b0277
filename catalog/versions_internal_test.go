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
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
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
			l := &Live{opts: LiveOptions{LiveWindow: time.Minute}, log: zap.NewNop(), reported: map[string]bool{}, compiled: map[string]*Tool{}}
			signs := workerSigns{beats: map[workerKey]beat{}}
			var pubs []listed
			for _, p := range tc.pubs {
				pubs = append(pubs, listed{workflowID: signals.PublicationID(p.p.TaskQueue, p.p.Identity), pub: p.p})
				if p.closed {
					pubs[len(pubs)-1].closed = now.Add(-time.Minute)
					continue
				}
				if !p.dead {
					signs.beats[workerKey{p.p.TaskQueue, p.p.Identity}] = beat{at: now, interval: 3 * time.Second, running: true, publication: true}
				}
			}
			v := l.build(now, pubs, signs, tc.routes)
			tool, unav := v.byKey["t"], v.unav["t"]
			switch {
			case tc.want != "" && tool == nil:
				t.Fatalf("tool unavailable (%v), want it listed with %q", unav, tc.want)
			case tc.want != "" && tool.Spec().Description != tc.want:
				t.Fatalf("listed %q, want %q", tool.Spec().Description, tc.want)
			case tc.want == "" && (unav == nil || !strings.Contains(unav.Reason, tc.wantWhy)):
				t.Fatalf("tool %v, unavailable %v; want unavailable for %q", tool, unav, tc.wantWhy)
			}
			var served []string
			for _, p := range v.served["t"] {
				served = append(served, p.pub.Identity)
			}
			if strings.Join(served, ",") != strings.Join(tc.served, ",") {
				t.Errorf("served by %v, want %v", served, tc.served)
			}
			var others []string
			for _, o := range v.others["t"] {
				others = append(others, o.Spec().Description)
			}
			if strings.Join(others, ",") != strings.Join(tc.others, ",") {
				t.Errorf("other versions %v, want %v", others, tc.others)
			}
		})
	}
}
