package engine

import "strconv"

// Breakdown splits a variant's desired replicas by the rule that asks for
// them (VariantDecision.Breakdown, in replicas), or a model's cost after the
// plan the same way (ModelSummary.CostBreakdown, in the units of the
// variants' costs). Only the queueing model's need is sized for the
// demand measured now; every other part is headroom, and this is its
// price (docs/engine.md §5 item 7, "Where the replicas go").
type Breakdown struct {
	// Need: the queueing model's target for the demand measured now (its
	// target less the forecast's spare and the drain's transient part).
	Need float64 `json:"need,omitempty"`
	// Spare: the forecast's spare over the provisioning horizon.
	Spare float64 `json:"spare,omitempty"`
	// Backlog: the drain planner's transient replicas for a backlog.
	Backlog float64 `json:"backlog,omitempty"`
	// Saturation: replicas the saturation analysis asks for beyond the
	// model's target (a capacity veto, a saturation scale-up, a consensus
	// on its larger target).
	Saturation float64 `json:"saturation,omitempty"`
	// SafetyBlock: replicas the model would remove that the saturation
	// analysis finds unsafe to remove.
	SafetyBlock float64 `json:"safetyBlock,omitempty"`
	// Window: replicas the scale-down stabilisation window keeps.
	Window float64 `json:"window,omitempty"`
	// Other: replicas kept by any other rule — minReplicas, the idle
	// retention, a scale from zero, a provisional size that may only add.
	Other float64 `json:"other,omitempty"`
	// Unsized: the replicas of a variant the queueing model did not size
	// (no parameters yet, a failed analysis, capacity-only mode): nothing
	// tells its need from its headroom.
	Unsized float64 `json:"unsized,omitempty"`
	// Held: the replicas of a variant held at its last good decision
	// because its metrics are unusable.
	Held float64 `json:"held,omitempty"`
}

// Headroom is everything but the need (and the unsized and held
// replicas, whose need is unknown).
func (b Breakdown) Headroom() float64 {
	return b.Spare + b.Backlog + b.Saturation + b.SafetyBlock + b.Window + b.Other
}

// Total is the sum of every part.
func (b Breakdown) Total() float64 { return b.Need + b.Headroom() + b.Unsized + b.Held }

// Add adds o scaled by k to b.
func (b *Breakdown) Add(o Breakdown, k float64) {
	b.Need += k * o.Need
	b.Spare += k * o.Spare
	b.Backlog += k * o.Backlog
	b.Saturation += k * o.Saturation
	b.SafetyBlock += k * o.SafetyBlock
	b.Window += k * o.Window
	b.Other += k * o.Other
	b.Unsized += k * o.Unsized
	b.Held += k * o.Held
}

// Parts lists the parts in their order, with the names their JSON keys
// have: the simulator and the docs use the same names.
func (b Breakdown) Parts() [9]BreakdownPart {
	return [9]BreakdownPart{{"need", b.Need}, {"spare", b.Spare}, {"backlog", b.Backlog},
		{"saturation", b.Saturation}, {"safetyBlock", b.SafetyBlock}, {"window", b.Window},
		{"other", b.Other}, {"unsized", b.Unsized}, {"held", b.Held}}
}

// BreakdownPart is one named part of a Breakdown.
type BreakdownPart struct {
	Name  string
	Value float64
}

// breakdown attributes the variant's desired replicas, after every rule of
// the cycle, to the rules that ask for them. The levels are taken in the
// order the cycle sets them — the model's need, its spare, the drain's
// backlog (the model's target), what arbitration added to it, what the
// enforcement rules before the window added, what the window kept — and
// the parts are filled from the bottom up to the desired count, so that a
// cap (maxReplicas, the scale-up limit, the inventory) takes its replicas
// from the top. A held variant's count is its last good decision's: all
// held.
func (vs *variantState) breakdown() Breakdown {
	final := float64(vs.target)
	if vs.held {
		return Breakdown{Held: final}
	}
	if vs.modelTarget < 0 {
		return Breakdown{Unsized: final}
	}
	model := vs.modelTarget
	need := max(model-vs.spare-vs.transient, 0)
	arbitrated := max(vs.arbTarget-model, 0)
	level := max(model, vs.arbTarget)
	enforced := max(vs.preWindow-level, 0)
	level = max(level, vs.preWindow)
	window := max(vs.target-level, 0)
	var b Breakdown
	left := final
	take := func(dst *float64, n int) {
		v := min(float64(n), left)
		*dst += v
		left -= v
	}
	spare := min(vs.spare, model-need)
	take(&b.Need, need)
	take(&b.Spare, spare)
	take(&b.Backlog, model-need-spare)
	switch vs.arbReason {
	case ReasonSafetyBlock:
		take(&b.SafetyBlock, arbitrated)
	case ReasonCapacityVeto, ReasonSaturationScaleUp, ReasonSaturationSteady, ReasonSaturationScaleDown, ReasonConsensus:
		take(&b.Saturation, arbitrated)
	default:
		take(&b.Other, arbitrated)
	}
	take(&b.Other, enforced)
	take(&b.Window, window)
	// A count no level accounts for (none is expected): other rules.
	b.Other += left
	return b
}

// account records each variant's breakdown and prices it in the model's
// summary; where the variant holds headroom beyond the forecast's spare
// (which its own note prices), the explanation says what it is for and
// what it costs.
func (c *cycle) account(ms *modelState) {
	bs := make([]Breakdown, len(ms.variants)+1) // the last is the model's cost
	for i, vs := range ms.variants {
		bs[i] = vs.breakdown()
		vs.parts = &bs[i]
		cost := vs.v.cost()
		bs[len(ms.variants)].Add(bs[i], cost)
		if bs[i].Headroom() > bs[i].Spare {
			vs.notes = append(vs.notes, breakdownNote(bs[i], cost))
		}
	}
	ms.sum.CostBreakdown = &bs[len(ms.variants)]
	c.recordHeld(ms)
}

// breakdownNote is the explanation's account of a variant's headroom:
// "of 5 replica(s): 2 for the demand now, +1 spare, +2 safety block;
// the headroom costs 7.5, 150 % of the need's". It runs for thousands of
// variants a cycle, so it appends to one buffer. A variant's parts are
// whole replicas (breakdown).
func breakdownNote(b Breakdown, cost float64) string {
	buf := make([]byte, 0, 160)
	buf = append(buf, "of "...)
	buf = strconv.AppendInt(buf, int64(b.Total()), 10)
	buf = append(buf, " replica(s): "...)
	buf = strconv.AppendInt(buf, int64(b.Need), 10)
	buf = append(buf, " for the demand now"...)
	parts := b.Parts()
	for i, p := range parts {
		if i > 0 && p.Value > 0 {
			buf = append(buf, ", +"...)
			buf = strconv.AppendInt(buf, int64(p.Value), 10)
			buf = append(buf, ' ')
			buf = append(buf, partWords[i]...)
		}
	}
	buf = append(buf, "; the headroom costs "...)
	buf = strconv.AppendFloat(buf, b.Headroom()*cost, 'g', 3, 64)
	if b.Need > 0 {
		buf = append(buf, ", "...)
		buf = strconv.AppendFloat(buf, 100*b.Headroom()/b.Need, 'f', 0, 64)
		buf = append(buf, " % of the need's"...)
	}
	return string(buf)
}

// partWords names the parts in an explanation, in Parts' order.
var partWords = [9]string{"for the demand now", "spare", "for the backlog", "from the saturation analysis",
	"safety block", "scale-down window", "other rules", "unsized", "held"}
