package engine

import (
	"fmt"
	"math"
	"sort"
)

func direction(target, current int) int {
	switch {
	case target > current:
		return 1
	case target < current:
		return -1
	}
	return 0
}

// arbitrate picks each variant's target from the analyzers' proposals by
// mode, with the hybrid matrix of docs/engine.md §5:
//
//	capacity   model      final
//	up         down       capacity veto: the capacity target
//	same       down       the model target if the scale-down is safe, else a safety block
//	up         same       the capacity target
//	same       up         the model target
//	up         up         consensus: the larger target
//	down       down       consensus: the larger (less aggressive) target
//	down       same       no change (the model sees no room)
//	down       up         the model target (it sees a need the saturation signals do not yet show)
//	same       same       no change
func (c *cycle) arbitrate(ms *modelState) {
	var downs []*variantState
	for _, vs := range ms.variants {
		cur := vs.v.CurrentReplicas
		vs.target = cur
		switch c.mode {
		case ModeCapacityOnly:
			c.capacityOnly(vs)
		case ModeModelOnly:
			c.modelOnly(vs)
		default:
			if c.hybrid(vs) {
				downs = append(downs, vs)
			}
		}
	}
	c.safetyCheck(downs)
	for _, vs := range ms.variants {
		vs.arbTarget, vs.arbReason = vs.target, vs.reason
	}
}

func (c *cycle) capacityOnly(vs *variantState) {
	cur := vs.v.CurrentReplicas
	if vs.capTarget < 0 {
		vs.reason = ReasonSaturationSteady
		vs.note("no saturation signal (no replica reports metrics)")
		return
	}
	vs.target = vs.capTarget
	vs.reason = [...]Reason{ReasonSaturationScaleDown, ReasonSaturationSteady, ReasonSaturationScaleUp}[direction(vs.capTarget, cur)+1]
	c.noteSaturation(vs)
}

func (c *cycle) modelOnly(vs *variantState) {
	cur := vs.v.CurrentReplicas
	if vs.modelTarget < 0 {
		vs.reason = ReasonModelUnavailable
		vs.note("model analysis unavailable: %s", vs.model.sum.ModelError)
		return
	}
	vs.target = vs.modelTarget
	if vs.provisional && vs.target < cur {
		// A warming tuner's estimate never removes replicas.
		vs.target = cur
	}
	vs.reason = [...]Reason{ReasonModelScaleDown, ReasonModelSteady, ReasonModelScaleUp}[direction(vs.target, cur)+1]
	c.noteModel(vs)
	if vs.target < cur {
		if p := saturatedPod(vs); p != nil {
			vs.target, vs.reason = cur, ReasonSafetyBlock
			vs.note("safety block: the model would scale down to %d, but pod %s is saturated (KV %.2f, %.0f waiting): its metrics contradict the demand",
				vs.modelTarget, p.Name, p.KVCacheUsage, p.WaitingRequests)
		}
	}
}

// saturatedPod is a pod of the variant at or past the saturation
// analyzer's thresholds (KV cache or queue), if any. Model-only mode never
// scales such a variant down: a demand low enough to remove replicas while
// one is saturated means some metric is wrong (a missing counter read as
// no traffic, say), and removing capacity is the unsafe reading.
func saturatedPod(vs *variantState) *Pod {
	for _, p := range vs.pods {
		if vs.model.satCfg.saturates(p.KVCacheUsage, p.WaitingRequests) {
			return p
		}
	}
	return nil
}

// hybrid applies the matrix; it returns true when the variant's model-based
// scale-down still needs the group safety check.
func (c *cycle) hybrid(vs *variantState) bool {
	if c.oneSided(vs) {
		return false
	}
	cur := vs.v.CurrentReplicas
	cd, md := direction(vs.capTarget, cur), direction(vs.modelTarget, cur)
	c.noteSaturation(vs)
	c.noteModel(vs)
	switch {
	case cd > 0 && md < 0:
		vs.target, vs.reason = vs.capTarget, ReasonCapacityVeto
		vs.note("capacity veto: saturation needs %d, the model would go down to %d", vs.capTarget, vs.modelTarget)
	case cd > 0 && md > 0, cd < 0 && md < 0:
		vs.target, vs.reason = max(vs.capTarget, vs.modelTarget), ReasonConsensus
	case cd > 0:
		vs.target, vs.reason = vs.capTarget, ReasonSaturationScaleUp
	case md > 0:
		vs.target, vs.reason = vs.modelTarget, ReasonModelScaleUp
	case cd == 0 && md < 0:
		vs.target, vs.reason = vs.modelTarget, ReasonModelScaleDown
		return true
	case cd < 0 && md == 0:
		vs.reason = ReasonModelSteady
		vs.note("saturation would scale down, the model sees no room")
	default:
		vs.reason = ReasonConsensus
	}
	return false
}

// oneSided decides the hybrid cases where one analyzer decides alone and
// reports whether it did: no model target (the saturation analysis), no
// saturation target (the model), or a model sized provisionally by a
// warming tuner, whose estimate may add replicas, never remove any (the
// saturation analysis, raised to the model's target).
func (c *cycle) oneSided(vs *variantState) bool {
	switch {
	case vs.modelTarget < 0:
		c.capacityOnly(vs)
		if vs.model.sum.ModelError != "" {
			vs.note("model analysis unavailable: %s", vs.model.sum.ModelError)
		}
		c.noteModel(vs)
		c.sloMiss(vs)
	case vs.capTarget < 0:
		c.modelOnly(vs)
	case vs.provisional:
		c.capacityOnly(vs)
		c.noteModel(vs)
		if vs.modelTarget > vs.target {
			vs.target, vs.reason = vs.modelTarget, ReasonModelScaleUp
			vs.note("the model, sized provisionally (%s), asks for more", vs.detail.Tuning)
		}
	default:
		return false
	}
	return true
}

// sloMiss acts for a variant the queueing model cannot size for want of
// parameters (a cold start before the tuner has warmed up, no profile) on
// its model's last window of latency histograms, when no replica of the
// model is starting and none became ready within feedbackSettleSeconds:
// the saturation analyzer, the fallback then, reads only the KV cache and
// the queues, and a compute-bound server admits its whole load into a
// batch whose latency misses with neither signal raised (production-chat
// seed 1: 2 replicas, a quarter of the requests beyond the 60-ms ITL
// target at KV 0.2 and no queue for the three minutes the tuner took to
// size them, while the saturation analysis said one could go;
// docs/engine.md §5). A window that misses the attainment target blocks a
// scale-down; one that misses it by sloMissTrigger times the error budget
// or more scales the ready replicas R by 1 / a_obs — without a model, a
// fleet short of its demand serves within the SLO about the share it has
// capacity for — to ⌈R / a_obs⌉, at most 2R.
func (c *cycle) sloMiss(vs *variantState) {
	ms := vs.model
	if !vs.noParams || ms.demand == 0 || ms.sum.SLOTTFTMs <= 0 || c.e == nil {
		return
	}
	if c.settling(ms) {
		return
	}
	cur, ready := vs.v.CurrentReplicas, vs.v.ReadyReplicas
	o, err := c.observed(ms)
	if err != nil || o.Requests < feedbackMinRequests || ready == 0 || o.Attainment >= ms.attainment {
		return
	}
	within := fmt.Sprintf("%.1f %% of %.0f requests within the SLO in the last window (target %.1f %%), no replica starting, the model not yet sized",
		100*o.Attainment, o.Requests, 100*ms.attainment)
	if 1-o.Attainment < sloMissTrigger*(1-ms.attainment) {
		if vs.target < cur {
			vs.target, vs.reason = cur, ReasonSLOMiss
			vs.note("SLO miss: %s: no scale-down", within)
		}
		return
	}
	// At most twice the ready replicas: below ½ the misses say less about
	// the size of the shortage than about the fleet's trouble (a wake, a
	// restart), and the next window can ask again.
	want := int(math.Ceil(float64(ready)/math.Max(o.Attainment, 0.5) - 1e-9))
	if want <= vs.target {
		return
	}
	vs.target, vs.reason = want, ReasonSLOMiss
	vs.note("SLO miss: %s: %d ready replica(s) serve that share of the demand, so %d", within, ready, want)
}

// settling says whether a replica of the model is starting, or one was
// within feedbackSettleSeconds (the feedback's record of its last
// shortage, kept up to date here too).
func (c *cycle) settling(ms *modelState) bool {
	fb := c.e.state.Feedback[ms.key]
	for _, w := range ms.variants {
		if w.v.CurrentReplicas > w.v.ReadyReplicas {
			if fb != nil {
				fb.LastShort = c.now
			}
			return true
		}
	}
	return fb != nil && !fb.LastShort.IsZero() && c.now.Sub(fb.LastShort).Seconds() < feedbackSettleSeconds
}

// sloMissTrigger is how many times the error budget a window must miss by
// before sloMiss scales up: 3 % of requests beyond the SLO at the default
// 99 % target.
const sloMissTrigger = 3

// safetyCheck lets the model's scale-downs through only where the saturation
// analysis finds them safe: all of a group's removals together, else the
// most expensive first while they stay safe; the rest are blocked.
func (c *cycle) safetyCheck(downs []*variantState) {
	groups := map[*satGroup][]*variantState{}
	for _, vs := range downs {
		groups[vs.sat] = append(groups[vs.sat], vs)
	}
	for g, vss := range groups {
		sort.SliceStable(vss, func(i, j int) bool { return vss[i].v.cost() > vss[j].v.cost() })
		removed := map[*variantState]int{}
		for _, vs := range vss {
			removed[vs] = vs.v.CurrentReplicas - vs.modelTarget
			if g != nil && g.safeToRemove(removed) {
				continue
			}
			if c.calibrated(vs.model) && saturatedPod(vs) == nil {
				fb := c.e.state.Feedback[vs.model.key]
				vs.note("the saturation analysis would block it, but the model is calibrated (%.1f %% of requests within the SLO at its last test, %d tests) and no pod is saturated",
					100*fb.Observed, fb.Updates)
				continue
			}
			delete(removed, vs)
			vs.target, vs.reason = vs.v.CurrentReplicas, ReasonSafetyBlock
			why := "the saturation analysis finds it unsafe"
			if g != nil && g.downBlocked() != "" {
				why = g.downBlocked()
			}
			vs.note("safety block: the model would scale down to %d, but %s", vs.modelTarget, why)
		}
	}
}

func (c *cycle) noteSaturation(vs *variantState) {
	g := vs.sat
	if g == nil || g.unit == nil {
		return
	}
	vs.notes = append(vs.notes, g.summary())
}

// summary is the group's saturation figures in words, formatted once for
// all its variants.
func (g *satGroup) summary() string {
	if g.text != "" {
		return g.text
	}
	d := g.d
	switch {
	case d.ScaleUp:
		g.text = fmt.Sprintf("saturation: %d of %d replicas saturated, spare KV %.2f, spare queue %.1f; +%d for headroom",
			d.Saturated, d.Replicas, d.AvgSpareKV, d.AvgSpareQueue, d.ExtraReplicas)
	case d.ScaleDownSafe:
		g.text = fmt.Sprintf("saturation: spare KV %.2f, spare queue %.1f; %d replica(s) can go", d.AvgSpareKV, d.AvgSpareQueue, d.Removable)
	default:
		g.text = fmt.Sprintf("saturation: spare KV %.2f, spare queue %.1f", d.AvgSpareKV, d.AvgSpareQueue)
	}
	if d.Note != "" && !d.ScaleDownSafe {
		g.text += "; " + d.Note
	}
	return g.text
}

func (c *cycle) noteModel(vs *variantState) {
	ms := vs.model
	switch {
	case vs.detail == nil:
	case vs.detail.Error != "" && vs.modelTarget >= 0:
		vs.note("model: cannot size this variant (%s); it keeps %d while the others carry the demand", vs.detail.Error, vs.modelTarget)
	case vs.detail.Error != "":
		vs.note("model: cannot size (%s)", vs.detail.Error)
	case ms.demand == 0:
		vs.note("model: no traffic")
	default:
		vs.note("model: %.3g rps demand, %.3g rps per replica within TTFT %.4g ms / ITL %.4g ms (%s SLO)",
			ms.demand, vs.capacity, ms.sum.SLOTTFTMs, ms.sum.SLOITLMs, ms.sum.SLOSource)
		if vs.spare > 0 && ms.surged {
			vs.note("+%d replica(s) spare: a surge to %.3g× the demand (surgeRatio) within the %.0f-s horizon is %.3g rps; the spare costs %.3g, %.0f %% of this variant's model target",
				vs.spare, ms.surgeRatio, ms.horizon, ms.planned,
				float64(vs.spare)*vs.v.cost(), 100*float64(vs.spare)/float64(max(vs.modelTarget, vs.spare)))
		} else if vs.spare > 0 {
			trend := ""
			if ms.provisional {
				trend = ", its level: a provisional size plans without the trend"
			}
			vs.note("+%d replica(s) spare: the %.3g %% forecast is %.3g rps in %.0f s (mean %.3g%s)%s; the spare costs %.3g, %.0f %% of this variant's model target",
				vs.spare, 100*ms.sum.SpareQuantile, ms.planned, ms.horizon, ms.forecastMean, trend, c.spareWhy(ms),
				float64(vs.spare)*vs.v.cost(), 100*float64(vs.spare)/float64(max(vs.modelTarget, vs.spare)))
		}
		if ms.sum.SpareHeld && vs.spare > 0 {
			vs.note("the scale-down window keeps the spare (an attainment target above %.4g %%)", 100*SpareHeldAbove)
		}
	}
}

// spareWhy says where the spare's quantile came from when the
// configuration did not set it: the model's attainment target.
func (c *cycle) spareWhy(ms *modelState) string {
	if c.cfg.SpareQuantile != 0 {
		return ""
	}
	return fmt.Sprintf(", for a %.3g %% attainment target", 100*ms.attainment)
}

// calibrated: the attainment feedback has counted at least
// calibratedUpdates windows that tested the model's capacity, the last of
// them within calibratedSeconds, and that window met the target. The
// saturation analysis then no longer blocks the model's scale-downs on its
// own estimate of the load (docs/engine.md §5): it still holds a variant
// whose pods are saturated, where the metrics contradict the model.
func (c *cycle) calibrated(ms *modelState) bool {
	if c.e == nil {
		return false
	}
	fb := c.e.state.Feedback[ms.key]
	return fb != nil && fb.Updates >= calibratedUpdates && fb.Observed >= ms.attainment &&
		c.now.Sub(fb.Last).Seconds() < calibratedSeconds
}

// A model is calibrated after three windows that tested its capacity, the
// last within ten minutes.
const (
	calibratedUpdates = 3
	calibratedSeconds = 600
)
