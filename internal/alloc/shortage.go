package alloc

import "sort"

// shortage shares an accelerator type that cannot hold every server's SLO
// (no server can move off it and still cover its demand). The servers on
// it keep their minimums; the rest goes, as replicas of the options their
// covers use on it, by the policy:
//   - None and PriorityExhaustive: by priority (then input order), each
//     takes all it needs;
//   - PriorityRoundRobin: within each priority, one replica at a time;
//   - RoundRobin: one replica at a time across all.
//
// A server that gets less than it needs is short: it covers what it can
// with that and with what other types have left (best effort), except that
// under None it keeps at most the replicas it runs on t.
func (l *joint) shortage(t string, policy Policy) {
	var on []int
	for i := range l.plans {
		if l.plans[i].unitsOn(l.plans[i].cover, t) > 0 {
			on = append(on, i)
		}
	}
	sort.SliceStable(on, func(a, b int) bool { return l.plans[on[a]].srv.Priority < l.plans[on[b]].srv.Priority })
	grant := make(map[int][]int, len(on))
	avail := l.free[t]
	for _, i := range on {
		p := &l.plans[i]
		g := make([]int, len(p.opts))
		for j, o := range p.opts {
			if o.Accelerator == t {
				g[j] = min(max(o.Min, 0), p.cover.Replicas[j])
				avail -= g[j] * units(o)
			}
		}
		grant[i] = g
	}
	switch policy {
	case PolicyRoundRobin:
		l.roundRobin(t, on, grant, &avail)
	case PolicyPriorityRoundRobin:
		for a := 0; a < len(on); {
			b := a
			for b < len(on) && l.plans[on[b]].srv.Priority == l.plans[on[a]].srv.Priority {
				b++
			}
			l.roundRobin(t, on[a:b], grant, &avail)
			a = b
		}
	default:
		for _, i := range on {
			for l.grantOne(t, i, grant[i], &avail) {
			}
		}
	}
	for _, i := range on {
		l.limit(&l.plans[i], t, grant[i], policy)
	}
}

// roundRobin grants one replica at a time to each server in turn.
func (l *joint) roundRobin(t string, group []int, grant map[int][]int, avail *int) {
	for progress := true; progress; {
		progress = false
		for _, i := range group {
			if l.grantOne(t, i, grant[i], avail) {
				progress = true
			}
		}
	}
}

// grantOne gives server i one more replica of the most cost-efficient
// option on t that its cover uses more of than granted, if it fits.
func (l *joint) grantOne(t string, i int, g []int, avail *int) bool {
	p := &l.plans[i]
	for _, j := range efficiencyOrder(p.opts) {
		o := p.opts[j]
		if o.Accelerator != t || g[j] >= p.cover.Replicas[j] {
			continue
		}
		if units(o) > *avail {
			return false
		}
		g[j]++
		*avail -= units(o)
		return true
	}
	return false
}

// limit caps server p's options on t at its grant and covers what it can.
// The options on other types may grow by what those types have left; if
// the new cover would take more, they keep their counts.
func (l *joint) limit(p *plan, t string, g []int, policy Policy) {
	caps := append([]int(nil), p.caps...)
	for j, o := range p.opts {
		if o.Accelerator == t {
			caps[j] = min(caps[j], g[j])
			p.short = p.short || g[j] < p.cover.Replicas[j]
		}
	}
	if p.short && policy == PolicyNone {
		p.keep = true
		for j, o := range p.opts {
			if o.Accelerator == t {
				caps[j] = min(caps[j], max(o.Current, o.Min, 0))
			}
		}
	}
	grown := append([]int(nil), caps...)
	for j, o := range p.opts {
		if o.Accelerator != t {
			grown[j] = min(grown[j], p.cover.Replicas[j]+l.residual(o.Accelerator)/units(o))
		}
	}
	c := p.solve(grown)
	if !l.fitsElsewhere(p, c, t) {
		for j, o := range p.opts {
			if o.Accelerator != t {
				grown[j] = min(grown[j], p.cover.Replicas[j])
			}
		}
		c = p.solve(grown)
	}
	l.set(p, grown, c)
}
