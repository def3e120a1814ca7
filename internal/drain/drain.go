// Package drain plans a scale-down that removes no pod while it serves.
//
// Lowering a workload's replica count makes its controller delete pods at
// once; a vLLM server that gets SIGTERM rejects new requests and, with its
// default --shutdown-timeout 0, aborts the ones in flight. So before WVA
// lowers a variant it takes the pods that are to go (the victims) out of
// the gateway's rotation, waits until each is idle (no running or waiting
// request in its metrics) or a bounded timeout has passed, and only then
// lowers the count by the victims that are done, marking them so that the
// workload's controller deletes those and no others. A victim is put back
// in rotation if the load returns before it is done.
//
// Plan is a pure function of the workload's pods, their drain marks and
// the clock, so the state lives on the pods (the controller keeps it in
// annotations and survives a restart or a new leader), and the controller
// and the simulator run the same rules.
package drain

import (
	"fmt"
	"sort"
	"time"
)

// Pod is one replica of a variant as the drain planner sees it. For a
// LeaderWorkerSet a replica is a group; the caller folds its pods into one.
type Pod struct {
	Name string
	// Ready is true for a pod that serves (ready and not terminating). A
	// pod that is not ready serves nothing, so it needs no drain.
	Ready bool
	// Draining is true while the pod is out of rotation for a drain that
	// began at Since.
	Draining bool
	Since    time.Time
	// InFlight is the running plus waiting requests of the pod's latest
	// metrics; negative when the pod has no usable metrics.
	InFlight float64
	// Rank is the pod's ordinal where the workload removes its highest
	// ordinals first (a StatefulSet's pod, a LeaderWorkerSet's group).
	Rank int
}

// Policy is how a variant drains.
type Policy struct {
	// Timeout bounds a drain: a victim still busy after it is removed
	// anyway (what it holds is then up to the server's shutdown). Zero
	// turns draining off: a scale-down lowers the count at once.
	Timeout time.Duration
	// Ordered is true for a workload that removes its highest ordinals on
	// a scale-down (StatefulSet, LeaderWorkerSet), so the victims are not
	// a choice: they are the ranks at or above the new count. Otherwise
	// (a Deployment's ReplicaSet) the victims are chosen and marked with
	// pod-deletion-cost.
	Ordered bool
}

// Enabled says whether the policy drains.
func (p Policy) Enabled() bool { return p.Timeout > 0 }

// Step is what to do now.
type Step struct {
	// Replicas is the count to apply now: the desired one when nothing
	// need drain, else the current one less the victims that are done and
	// the pods that serve nothing.
	Replicas int
	// Drain are the pods to take out of rotation now; Restore the ones to
	// put back; Remove the drained ones this step's count removes (a
	// chosen victim is marked with pod-deletion-cost); Waiting the victims
	// still draining after this step. Each is in name order.
	Drain, Restore, Remove, Waiting []string
	// Note says what the step does, for the variant's explanation ("" when
	// no drain is under way).
	Note string
}

// Plan is the step that moves a variant from current replicas (the
// workload's spec) toward desired ones at time now. victims is the
// engine's choice, in order of preference (least loaded first); pods are
// the variant's pods that are not terminating. Plan never lowers the count
// below desired, and never by a pod that still serves and has neither
// gone idle nor timed out.
func Plan(now time.Time, pol Policy, current, desired int, victims []string, pods []Pod) Step {
	byName := make(map[string]*Pod, len(pods))
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	if !pol.Enabled() || desired >= current {
		return Step{Replicas: desired, Restore: draining(pods, nil)}
	}
	var chosen []*Pod
	free := 0
	if pol.Ordered {
		chosen, free = orderedVictims(pods, desired)
	} else {
		chosen, free = chooseVictims(pods, byName, victims, current-desired)
	}
	keep := make(map[string]bool, len(chosen))
	var st Step
	done := 0
	for _, p := range chosen {
		keep[p.Name] = true
		switch {
		case !p.Draining:
			st.Drain = append(st.Drain, p.Name)
		case idle(now, pol, p):
			st.Remove = append(st.Remove, p.Name)
			done++
		default:
			st.Waiting = append(st.Waiting, p.Name)
		}
	}
	st.Restore = draining(pods, keep)
	if pol.Ordered {
		st.Replicas = orderedCount(now, pol, pods, current, desired)
	} else {
		st.Replicas = max(current-free-done, desired)
	}
	sort.Strings(st.Drain)
	sort.Strings(st.Remove)
	sort.Strings(st.Waiting)
	st.Note = note(st, current, desired, pol)
	return st
}

// idle says whether a draining pod may go: it was out of rotation before
// now (so the gateway has stopped sending to it since the metrics were
// read) and holds no request, or its drain has timed out.
func idle(now time.Time, pol Policy, p *Pod) bool {
	if !p.Ready {
		return true
	}
	if !now.Before(p.Since.Add(pol.Timeout)) {
		return true
	}
	return p.Since.Before(now) && p.InFlight == 0
}

// chooseVictims picks k pods to remove where any may go: pods that serve
// nothing (not ready, not draining) go first and need no drain, as the
// ReplicaSet deletes them first; then the pods already draining (their
// drain is under way), the oldest first; then the engine's victims in its
// order; then the least-loaded of the others. It returns the pods to drain
// and how many of the k need none.
func chooseVictims(pods []Pod, byName map[string]*Pod, victims []string, k int) ([]*Pod, int) {
	free := 0
	for i := range pods {
		if !pods[i].Ready && !pods[i].Draining {
			free++
		}
	}
	free = min(free, k)
	k -= free
	var out []*Pod
	taken := map[string]bool{}
	take := func(p *Pod) {
		if len(out) < k && !taken[p.Name] {
			taken[p.Name] = true
			out = append(out, p)
		}
	}
	for _, p := range inDrain(pods) {
		take(p)
	}
	for _, name := range victims {
		if p := byName[name]; p != nil && p.Ready {
			take(p)
		}
	}
	for _, p := range leastLoaded(pods, taken) {
		take(p)
	}
	return out, free
}

// inDrain are the pods draining, the oldest drain first.
func inDrain(pods []Pod) []*Pod {
	var out []*Pod
	for i := range pods {
		if pods[i].Draining {
			out = append(out, &pods[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// leastLoaded are the ready pods not taken, the least loaded first.
func leastLoaded(pods []Pod, taken map[string]bool) []*Pod {
	var out []*Pod
	for i := range pods {
		if pods[i].Ready && !taken[pods[i].Name] {
			out = append(out, &pods[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := load(out[i]), load(out[j])
		if a != b {
			return a < b
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// load orders pods for removal: unknown load last.
func load(p *Pod) float64 {
	if p.InFlight < 0 {
		return 1e300
	}
	return p.InFlight
}

// orderedVictims are the pods of rank desired and above, the ones an
// ordered workload removes: those that serve need a drain, the others
// (counted as free) none.
func orderedVictims(pods []Pod, desired int) ([]*Pod, int) {
	var out []*Pod
	free := 0
	for i := range pods {
		if pods[i].Rank < desired {
			continue
		}
		if pods[i].Ready || pods[i].Draining {
			out = append(out, &pods[i])
		} else {
			free++
		}
	}
	return out, free
}

// orderedCount is the count an ordered workload may go down to now: the
// lowest r ≥ desired such that every pod of rank r or above is done
// (serves nothing, or has drained), since lowering to r removes them all.
func orderedCount(now time.Time, pol Policy, pods []Pod, current, desired int) int {
	lowest := current
	for r := current - 1; r >= desired; r-- {
		ok := true
		for i := range pods {
			p := &pods[i]
			if p.Rank == r && p.Ready && (!p.Draining || !idle(now, pol, p)) {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		lowest = r
	}
	return lowest
}

// draining lists the pods out of rotation that keep does not hold, in name
// order: the ones to put back.
func draining(pods []Pod, keep map[string]bool) []string {
	var out []string
	for i := range pods {
		if pods[i].Draining && !keep[pods[i].Name] {
			out = append(out, pods[i].Name)
		}
	}
	sort.Strings(out)
	return out
}

// note explains a step with a drain under way.
func note(st Step, current, desired int, pol Policy) string {
	if len(st.Drain)+len(st.Waiting)+len(st.Remove) == 0 {
		return ""
	}
	s := fmt.Sprintf("draining before scaling %d → %d:", current, desired)
	if len(st.Remove) > 0 {
		s += fmt.Sprintf(" %d drained, removed now;", len(st.Remove))
	}
	if n := len(st.Drain); n > 0 {
		s += fmt.Sprintf(" %d taken out of rotation;", n)
	}
	if n := len(st.Waiting); n > 0 {
		s += fmt.Sprintf(" %d still serving (at most %s);", n, pol.Timeout)
	}
	return s[:len(s)-1] + fmt.Sprintf("; applying %d", st.Replicas)
}
