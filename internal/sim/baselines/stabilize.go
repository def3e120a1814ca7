package baselines

type rec struct {
	t float64
	n int
}

// stabilized returns the highest recommendation of the window (the HPA's
// scale-down stabilisation), after adding n.
func stabilized(recs map[int][]rec, i int, now, window float64, n int) int {
	keep := recs[i][:0]
	for _, r := range recs[i] {
		if now-r.t < window {
			keep = append(keep, r)
		}
	}
	keep = append(keep, rec{t: now, n: n})
	recs[i] = keep
	best := n
	for _, r := range keep {
		best = max(best, r.n)
	}
	return best
}
