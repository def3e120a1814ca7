package sim

import (
	"math"
	"sort"
	"strconv"
)

// Kubernetes' side of scaling: a Deployment's ReplicaSet creates pods that
// become ready after the model loads, and deletes the pods its ranking
// prefers when the replica count drops. A deleted pod gets SIGTERM, leaves
// the gateway's endpoints at once, and is killed after its grace period.

// DeletionCoster is implemented by an autoscaler that annotates pods with
// controller.kubernetes.io/pod-deletion-cost, as a controller allowed to
// patch pods can. The simulator applies the costs before the autoscaler's
// replica counts that the same decision returns; a pod keeps its annotation
// until it is set again. HPA and KEDA cannot set it.
type DeletionCoster interface {
	// DeletionCosts returns pod name → cost (int32, as the annotation).
	DeletionCosts(v *View) map[string]int32
}

// Drainer is implemented by an autoscaler that drains pods before it
// removes them: it takes pods out of the gateway's rotation (as the
// controller does with the endpoint picker's annotation) and puts them
// back. The simulator applies the marks of a decision before its counts,
// as it applies deletion costs. HPA and KEDA cannot drain.
type Drainer interface {
	// Drains returns the pods to take out of rotation and to put back.
	Drains(v *View) (out, back []string)
}

// addReplica creates a starting replica of v.
func (s *Sim) addReplica(v *variantRT) *replica {
	s.nextRep++
	r := newReplica(s, s.nextRep, v, s.uidRNG.Uint64())
	v.replicas = append(v.replicas, r)
	return r
}

func (s *Sim) ready(r *replica) {
	if r.state != starting {
		return
	}
	r.state, r.readyAt, r.startup = ready, s.now, s.now-r.created
	s.res.everReady = true
	s.gatewayReleased(r)
}

// retire removes a replica whose pod is gone.
func (s *Sim) retire(r *replica) {
	r.state = gone
	s.res.addCounters(r.Counters()) // the live replicas add theirs at the end
	v := r.v
	for i, x := range v.replicas {
		if x == r {
			v.replicas = append(v.replicas[:i], v.replicas[i+1:]...)
			break
		}
	}
}

// free returns the accelerators of a type not held by any replica.
func (s *Sim) free(acc string) int {
	inv, ok := s.sc.Inventory[acc]
	if !ok {
		return math.MaxInt32
	}
	for _, v := range s.variants {
		if v.cfg.Accelerator == acc {
			inv -= len(v.replicas) * v.cfg.AcceleratorsPerReplica
		}
	}
	return inv
}

// scale sets variant v's replicas to n (bounded by its min and max): new
// pods start if accelerators are free; surplus pods are deleted in the
// ReplicaSet controller's order. Terminating pods do not count, as they do
// not for a ReplicaSet.
func (s *Sim) scale(v *variantRT, n int, instant bool) bool {
	n = max(min(n, v.cfg.MaxReplicas), v.cfg.MinReplicas)
	var active []*replica
	for _, r := range v.replicas {
		if r.state == starting || r.state == ready {
			active = append(active, r)
		}
	}
	changed := n != len(active)
	for k := len(active); k < n; k++ {
		if s.free(v.cfg.Accelerator) < v.cfg.AcceleratorsPerReplica {
			s.res.Unschedulable++
			break
		}
		r := s.addReplica(v)
		delay := v.cfg.StartupSeconds + v.cfg.StartupJitterSeconds*s.startRNG.Float64()
		if instant {
			delay = 0
		}
		s.schedule(&event{t: s.now + delay, kind: evReplicaReady, replica: r})
	}
	if len(active) > n {
		rankForDeletion(active, s.now)
		for _, r := range active[:len(active)-n] {
			s.terminate(r)
		}
	}
	v.desired = n
	return changed
}

// rankForDeletion sorts pods the way the ReplicaSet controller prefers
// them for deletion (Kubernetes' ActivePodsWithRanks, with the default
// feature gates PodDeletionCost and LogarithmicScaleDown): not ready before
// ready; lower pod-deletion-cost first; of two ready pods, the one ready
// for less time, compared in powers of two of nanoseconds, ties broken by
// UID (pseudo-random); then the newer pod, likewise. Every pod here is
// scheduled, Running, on its own node and never restarted, so the other
// rules do not separate them. Load is not considered.
func rankForDeletion(pods []*replica, now float64) {
	sort.SliceStable(pods, func(i, j int) bool { return deleteBefore(pods[i], pods[j], now) })
}

func deleteBefore(a, b *replica, now float64) bool {
	ar, br := a.state == ready, b.state == ready
	if ar != br {
		return !ar
	}
	if a.deletionCost != b.deletionCost {
		return a.deletionCost < b.deletionCost
	}
	if ar && a.readyAt != b.readyAt {
		if d := logRank(now-a.readyAt) - logRank(now-b.readyAt); d != 0 {
			return d < 0
		}
		return a.uid < b.uid
	}
	if a.created != b.created {
		if d := logRank(now-a.created) - logRank(now-b.created); d != 0 {
			return d < 0
		}
		return a.uid < b.uid
	}
	return false
}

// logRank is ⌊log2(age in ns)⌋, −1 for no age.
func logRank(age float64) int64 {
	ns := age * 1e9
	if !(ns >= 1) {
		return -1
	}
	return int64(math.Log2(ns))
}

// terminate deletes a pod. A starting one simply goes. A serving one gets
// SIGTERM and leaves the endpoints: with shutdown "abort" (vLLM's default,
// --shutdown-timeout 0) it fails what it holds and exits; with "drain" it
// finishes its requests and exits when empty, or is killed at
// terminationGracePeriodSeconds with the rest failing.
func (s *Sim) terminate(r *replica) {
	if r.state == starting {
		s.retire(r)
		return
	}
	r.state = terminating
	if r.v.cfg.Shutdown == "abort" || r.InFlight() == 0 {
		r.AbortAll()
		s.retire(r)
		return
	}
	s.schedule(&event{t: s.now + *r.v.cfg.TerminationGracePeriodSeconds, kind: evKill, replica: r})
}

func (s *Sim) autoscale() {
	view := s.view(true)
	want := s.scaler.Decide(view)
	if d, ok := s.scaler.(Drainer); ok {
		s.rotate(d.Drains(view))
	}
	if dc, ok := s.scaler.(DeletionCoster); ok {
		// The marks of this decision, applied before the replica counts
		// change (as the controller patches pods before scaling).
		s.annotate(dc.DeletionCosts(view))
	}
	atOnce := s.instant
	for i, n := range want {
		if n < 0 {
			continue
		}
		if s.scale(s.variants[i], n, atOnce) {
			s.res.ScalingActions++
		}
	}
	if atOnce {
		// The oracle's replicas are ready at once.
		for _, v := range s.variants {
			for _, r := range v.replicas {
				if r.state == starting {
					s.ready(r)
				}
			}
		}
	}
}

// fast runs the autoscaler's fast loop on the gateway's signals and the
// replica counts (no pod metrics, as the controller's loop reads none) and
// says whether it asks for a cycle now.
func (s *Sim) fast(f FastLooper) bool {
	want, cycleNow := f.Fast(s.view(false))
	for i, n := range want {
		if n >= 0 && s.scale(s.variants[i], n, false) {
			s.res.ScalingActions++
		}
	}
	return cycleNow
}

// annotate sets pod-deletion-cost annotations by pod name.
func (s *Sim) annotate(costs map[string]int32) {
	if len(costs) == 0 {
		return
	}
	for _, v := range s.variants {
		for _, r := range v.replicas {
			if c, ok := costs[podName(r)]; ok {
				r.deletionCost = c
			}
		}
	}
}

func podName(r *replica) string { return r.v.cfg.Name + "-" + strconv.Itoa(r.id) }

// rotate takes pods out of the gateway's rotation and puts others back;
// a pod put back takes the requests held at the gateway, as a pod that
// becomes ready does.
func (s *Sim) rotate(out, back []string) {
	if len(out)+len(back) == 0 {
		return
	}
	mark := make(map[string]bool, len(out)+len(back))
	for _, n := range out {
		mark[n] = true
	}
	for _, n := range back {
		mark[n] = false
	}
	for _, v := range s.variants {
		for _, r := range v.replicas {
			if d, ok := mark[podName(r)]; ok {
				s.setDraining(r, d)
			}
		}
	}
}

// setDraining takes a starting or ready replica out of the gateway's
// rotation (d) or puts it back.
func (s *Sim) setDraining(r *replica, d bool) {
	if r.draining == d || (r.state != ready && r.state != starting) {
		return
	}
	r.draining = d
	if d {
		r.drainSince = s.now
	} else if r.state == ready {
		s.gatewayReleased(r)
	}
}
