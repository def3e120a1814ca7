package alloc

import (
	"math"
	"sort"
)

// Policy is how limited mode shares an accelerator type that cannot hold
// every model's SLO ("saturation policy"; docs/engine.md §4).
type Policy string

// Saturation policies.
const (
	PolicyNone               Policy = "None"               // by priority; a model left short keeps at most what it runs on the short type
	PolicyPriorityExhaustive Policy = "PriorityExhaustive" // by priority, each takes what it needs of the type
	PolicyPriorityRoundRobin Policy = "PriorityRoundRobin" // one replica at a time, round-robin within each priority
	PolicyRoundRobin         Policy = "RoundRobin"         // one replica at a time, round-robin across all
)

// Server is one model competing for accelerators in limited mode.
type Server struct {
	Name     string
	Priority int // 1 is the highest
	Demand   float64
	Options  []Option
}

// Assignment is limited mode's answer for one server.
type Assignment struct {
	Replicas []int // per option
	// Chosen is the option that carries most of the demand, -1 if none.
	Chosen int
	// Satisfied is true when the demand is covered. BeyondMax: even every
	// variant at its maximum, inventory aside, cannot cover it (the server
	// gets as much as the inventory allows). BestEffort: the inventory was
	// short and the saturation policy gave the server a share of it.
	Satisfied  bool
	BeyondMax  bool
	BestEffort bool
	Cost       float64
	// MovedOff lists the accelerator types (sorted) the server gave up
	// replicas on to make room for other servers, and ExtraCost what that
	// cost over the cover it would have had alone.
	MovedOff  []string
	ExtraCost float64
}

// Limited allocates every server's replicas together under a per-type
// inventory (docs/engine.md §4, limited mode):
//
//  1. each server gets the cheapest cover of its demand (CheapestCover)
//     that the whole inventory allows, its options' costs raised by the
//     accelerator-change factor phi on types it runs nothing on yet;
//  2. while an accelerator type is over-subscribed, the server that can
//     give up units of that type at the least extra cost per unit freed,
//     still covering its demand with what the other types have left, moves
//     (a model that can only run on the scarce type never can: the others
//     make room for it), whatever its priority;
//  3. when no server can move without missing its SLO, the type is short:
//     the saturation policy shares it, by priority (shortage).
//
// Replica limits only ever fall, so the loop ends; minReplicas always hold.
func Limited(servers []Server, inventory map[string]int, policy Policy, phi float64) []Assignment {
	free := make(map[string]int, len(inventory))
	for k, v := range inventory {
		free[k] = max(v, 0)
	}
	l := newJoint(servers, free, phi)
	l.resolve(policy)
	out := make([]Assignment, len(servers))
	for i := range l.plans {
		out[i] = l.plans[i].assignment(servers[i].Options)
	}
	return out
}

// plan is one server's allocation in progress.
type plan struct {
	srv    *Server
	opts   []Option // the server's options at their effective cost
	caps   []int    // replica limits per option; never rise
	cover  Cover
	beyond bool            // the demand exceeds every option at its maximum
	short  bool            // the shortage left the server a best-effort share
	keep   bool            // policy None: a short server keeps at most what it runs on the short type
	alone  Cover           // the cover before any move or shortage
	moved  map[string]bool // types it moved off
}

// joint is the allocation of all servers together.
type joint struct {
	plans   []plan
	free    map[string]int
	use     map[string]int // units per type of every plan's cover
	settled map[string]bool
}

func newJoint(servers []Server, free map[string]int, phi float64) *joint {
	l := &joint{plans: make([]plan, len(servers)), free: free, use: map[string]int{}, settled: map[string]bool{}}
	for i := range servers {
		p := &l.plans[i]
		p.srv = &servers[i]
		p.opts = effectiveOptions(servers[i].Options, phi)
		p.caps = make([]int, len(p.opts))
		for j, o := range p.opts {
			p.caps[j] = min(o.max(), free[o.Accelerator]/units(o))
		}
		p.beyond = servers[i].Demand > 0 && !CheapestCover(p.opts, servers[i].Demand).Feasible
		p.cover = p.solve(p.caps)
		p.alone = p.cover
		l.add(p, 1)
	}
	return l
}

// effectiveOptions raises by the factor phi the cost of the options on an
// accelerator type the server runs no replica on, when it runs some: the
// accelerator-change part of the reference optimizer's transition penalty
// (|C_new − C_cur| + φ·(C_cur + C_new) on a change of type), so that a
// model moves to another type only for a gain larger than phi.
func effectiveOptions(opts []Option, phi float64) []Option {
	on := map[string]bool{}
	for _, o := range opts {
		if o.Current > 0 {
			on[o.Accelerator] = true
		}
	}
	out := append([]Option(nil), opts...)
	for i := range out {
		if len(on) > 0 && !on[out[i].Accelerator] && phi > 0 {
			out[i].Cost *= 1 + phi
		}
	}
	return out
}

func units(o Option) int { return max(o.Units, 1) }

// solve is the cheapest cover of the server's demand within caps (and its
// minimums, which caps never undercut).
func (p *plan) solve(caps []int) Cover {
	opts := append([]Option(nil), p.opts...)
	for i := range opts {
		switch {
		case caps[i] > max(opts[i].Min, 0):
			opts[i].Max = caps[i]
		case opts[i].Min > 0:
			opts[i].Max = opts[i].Min
		default: // no replica allowed: Max ≤ 0 would mean no bound
			opts[i].Capacity, opts[i].Max = 0, 1
		}
	}
	return CheapestCover(opts, math.Max(p.srv.Demand, 0))
}

// unitsOn is the accelerators of type t that the cover uses.
func (p *plan) unitsOn(c Cover, t string) int {
	n := 0
	for i, o := range p.opts {
		if o.Accelerator == t {
			n += c.Replicas[i] * units(o)
		}
	}
	return n
}

func (l *joint) add(p *plan, sign int) {
	for i, o := range p.opts {
		l.use[o.Accelerator] += sign * p.cover.Replicas[i] * units(o)
	}
}

// set replaces a plan's caps and cover.
func (l *joint) set(p *plan, caps []int, c Cover) {
	l.add(p, -1)
	p.caps, p.cover = caps, c
	l.add(p, 1)
}

// resolve removes every over-subscription: by moves while one keeps its
// server's SLO, else by the saturation policy. Each step lowers a cap or
// settles a type, so it ends; the bound is a guard.
func (l *joint) resolve(policy Policy) {
	for guard := 0; guard < 1<<20; guard++ {
		t, excess := l.mostOver()
		if excess <= 0 {
			return
		}
		if !l.move(t, excess) {
			l.shortage(t, policy)
			l.settled[t] = true
		}
	}
}

// mostOver is the unsettled type with the largest over-subscription (by
// name on ties), and that excess in units.
func (l *joint) mostOver() (string, int) {
	types := make([]string, 0, len(l.use))
	for t := range l.use {
		types = append(types, t)
	}
	sort.Strings(types)
	best, excess := "", 0
	for _, t := range types {
		if e := l.use[t] - l.free[t]; e > excess && !l.settled[t] {
			best, excess = t, e
		}
	}
	return best, excess
}

// residual is what type t has left, at least 0.
func (l *joint) residual(t string) int { return max(l.free[t]-l.use[t], 0) }

// move finds the server whose giving up units of type t (up to excess)
// costs least per unit freed while it still covers its demand with what
// the other types have left, and applies it; false if no server can.
func (l *joint) move(t string, excess int) bool {
	best, bestScore := -1, math.Inf(1)
	var bestCaps []int
	var bestCover Cover
	for i := range l.plans {
		p := &l.plans[i]
		if p.beyond || !p.cover.Feasible || p.unitsOn(p.cover, t) == 0 {
			continue
		}
		caps := l.shrunk(p, t, excess)
		alt := p.solve(caps)
		freed := p.unitsOn(p.cover, t) - p.unitsOn(alt, t)
		if !alt.Feasible || freed <= 0 || !l.fitsElsewhere(p, alt, t) {
			continue
		}
		score := (alt.Cost - p.cover.Cost) / float64(freed)
		if score < bestScore-1e-12 || (math.Abs(score-bestScore) <= 1e-12 && p.srv.Priority > l.plans[best].srv.Priority) {
			best, bestScore, bestCaps, bestCover = i, score, caps, alt
		}
	}
	if best < 0 {
		return false
	}
	p := &l.plans[best]
	l.set(p, bestCaps, bestCover)
	if p.moved == nil {
		p.moved = map[string]bool{}
	}
	p.moved[t] = true
	return true
}

// shrunk is p's caps for a move off type t: on t, the cover's counts less
// replicas (the least cost-efficient first, never below a minimum) until
// excess units are freed; elsewhere, the cover's counts plus what the type
// has left.
func (l *joint) shrunk(p *plan, t string, excess int) []int {
	caps := append([]int(nil), p.caps...)
	order := efficiencyOrder(p.opts)
	freed := 0
	for k := len(order) - 1; k >= 0; k-- {
		i := order[k]
		o := p.opts[i]
		if o.Accelerator != t {
			caps[i] = min(caps[i], p.cover.Replicas[i]+l.residual(o.Accelerator)/units(o))
			continue
		}
		n := p.cover.Replicas[i]
		for freed < excess && n > max(o.Min, 0) {
			n--
			freed += units(o)
		}
		caps[i] = min(caps[i], n)
	}
	return caps
}

// fitsElsewhere: the alternative cover grows no other type beyond what it
// has left (two options on one type share that residual).
func (l *joint) fitsElsewhere(p *plan, alt Cover, t string) bool {
	grow := map[string]int{}
	for i, o := range p.opts {
		if o.Accelerator != t {
			grow[o.Accelerator] += (alt.Replicas[i] - p.cover.Replicas[i]) * units(o)
		}
	}
	for k, g := range grow {
		if g > 0 && g > l.residual(k) {
			return false
		}
	}
	return true
}

// assignment reports the plan at the options' real costs.
func (p *plan) assignment(opts []Option) Assignment {
	a := Assignment{Replicas: p.cover.Replicas, Chosen: -1, Satisfied: p.cover.Feasible && !p.beyond,
		BeyondMax: p.beyond, BestEffort: p.short && !p.keep}
	most := 0.0
	for i, n := range a.Replicas {
		a.Cost += float64(n) * opts[i].Cost
		a.ExtraCost += float64(n-p.alone.Replicas[i]) * opts[i].Cost
		if c := float64(n) * opts[i].Capacity; n > 0 && c > most {
			a.Chosen, most = i, c
		}
	}
	for t := range p.moved {
		a.MovedOff = append(a.MovedOff, t)
	}
	sort.Strings(a.MovedOff)
	return a
}
