package catalog

import (
	"github.com/openwop/temporal-mcp/signals"
)

// ramp is how the calls of one tool of a Worker Deployment's current
// version are routed: each goes to the ramping version, if any, with
// probability percent/100, to the current one otherwise, and its run is
// started on the version chosen.
type ramp struct {
	// listed is the tool as listed: the current version's spec.
	listed *Tool
	// current and ramping are the deployment's two versions; ramping is
	// zero when none ramps.
	current, ramping signals.DeploymentVersion
	// percent is the share of new runs the ramping version takes.
	percent float32
	// tool is the ramping version's spec; nil when none of its workers is
	// live or they disagree: then every call goes to the current version,
	// pinned, so that Temporal's own ramp does not send it there.
	tool *Tool
	// served are the live publications of the ramping version, which
	// ForCall confirms for a call sent to it.
	served []listed
}

// rampPlan is what rampOf finds of a tool's ramp, before compiling.
type rampPlan struct {
	current, ramping signals.DeploymentVersion // ramping: zero when none ramps
	percent          float32
	// spec is the ramping version's spec; nil when none of its workers is
	// live, or they publish different specs.
	spec   *signals.ToolSpec
	served []listed
}

// rampOf returns the routing a tool's calls follow when the candidates
// that take its new runs (pick, of takingNewRuns) are all of one Worker
// Deployment's current version: its calls start on that version, the one
// their arguments were checked against, even when a promotion happened
// since the catalog's reading; and when the deployment ramps another
// version, a share of them on that one. Of cands, the live candidates of
// the ramping version give its spec.
func rampOf(pick, cands []candidate, routes map[string]routing) (rampPlan, bool) {
	if len(pick) == 0 {
		return rampPlan{}, false
	}
	v := pick[0].version()
	for _, c := range pick {
		if cv := c.version(); v == nil || cv == nil || *cv != *v {
			return rampPlan{}, false
		}
	}
	r := routes[v.DeploymentName]
	if !r.known || r.current == "" || r.current != v.BuildID || r.toUnversioned {
		return rampPlan{}, false
	}
	p := rampPlan{current: *v}
	if r.ramping == "" || r.ramping == r.current {
		return p, true
	}
	p.ramping = signals.DeploymentVersion{DeploymentName: v.DeploymentName, BuildID: r.ramping}
	p.percent = r.percent
	for _, c := range cands {
		if cv := c.version(); !c.live || cv == nil || *cv != p.ramping {
			continue
		}
		if p.spec == nil {
			spec := c.spec
			p.spec = &spec
		} else if canonical(*p.spec) != canonical(c.spec) {
			return rampPlan{current: p.current, ramping: p.ramping, percent: p.percent}, true
		}
		p.served = append(p.served, *c.pub)
	}
	return p, true
}

// toRamping reports whether a call whose draw is x, in [0, 1), goes to the
// ramping version: with probability percent/100, and never when no
// worker of it is live.
func (r *ramp) toRamping(x float64) bool {
	return r.tool != nil && x*100 < float64(r.percent)
}

// route returns the tools a new run of t (as Lookup found it) may start
// as, in the order ForCall tries them: a tool whose deployment ramps a
// version goes, for this call, to the ramping version with the ramp's
// probability and to the current one otherwise, pinned to the version
// chosen; a call sent to the ramping version falls back on the current
// one (the second tool) when confirm finds the ramping version's workers
// gone. Each tool but the last knows the other version's
// (Tool.ForArguments).
func (l *Live) route(t *Tool) []*Tool {
	l.mu.Lock()
	v := l.view
	l.mu.Unlock()
	if v == nil {
		return []*Tool{t}
	}
	r := v.ramps[t.Name()]
	if r == nil || r.listed != t {
		return []*Tool{t}
	}
	current := t.pinnedTo(r.current, nil)
	if r.tool == nil {
		return []*Tool{current}
	}
	if !r.toRamping(l.opts.Rand()) {
		return []*Tool{t.pinnedTo(r.current, r.tool.pinnedTo(r.ramping, nil))}
	}
	return []*Tool{r.tool.pinnedTo(r.ramping, current), current}
}
