package sim

import (
	"context"
	"sync"

	"github.com/llm-d-incubation/wva/internal/sim/scenario"
)

// A Job is one simulation: an autoscaler over a scenario (with its seed).
type Job struct {
	Scenario   scenario.Scenario
	Autoscaler string
}

// RunJobs runs the jobs on up to parallel workers and passes keep each
// result that finished (not cut short by ctx) with its job's index; keep
// is called from the workers, once per index. It stops at the first error
// (an autoscaler that cannot be built) or when ctx is done. progress (may
// be nil) is called after each job with the jobs done and the total.
//
// The jobs start in order, except that the first job of each bound
// autoscaler starts first: a bound measures its scenario's capacity once
// (cached, its later runs wait for it), and started first it measures
// while the other workers run the rest, instead of holding them at the end.
// The results do not depend on the order.
func RunJobs(ctx context.Context, jobs []Job, parallel int, progress func(done, total int), keep func(k int, r *Result)) error {
	order := boundsFirst(jobs)
	return RunParallel(ctx, len(jobs), parallel, func(i int) error {
		k := order[i]
		s := jobs[k].Scenario
		a, err := NewAutoscaler(jobs[k].Autoscaler, &s)
		if err != nil {
			return err
		}
		if r := New(s, a).Run(ctx, nil); !r.Interrupted {
			keep(k, r)
		}
		return nil
	}, progress)
}

// boundsFirst is the order RunJobs starts the jobs in: the first job of
// each bound autoscaler, then the others as listed.
func boundsFirst(jobs []Job) []int {
	order := make([]int, 0, len(jobs))
	seen := map[string]bool{}
	first := make([]bool, len(jobs))
	for k, j := range jobs {
		if b := BaselineOf(j.Autoscaler); b != nil && b.Bound && !seen[b.Name] {
			seen[b.Name] = true
			first[k] = true
			order = append(order, k)
		}
	}
	for k := range jobs {
		if !first[k] {
			order = append(order, k)
		}
	}
	return order
}

// RunParallel calls run(0…n−1) on up to workers goroutines, stopping at
// the first error or when ctx is done, and reports progress after each.
func RunParallel(ctx context.Context, n, workers int, run func(int) error, progress func(done, total int)) error {
	workers = max(1, min(workers, n))
	next := make(chan int)
	var mu sync.Mutex
	var first error
	finished := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				err := run(k)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				finished++
				if progress != nil {
					progress(finished, n)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for k := range n {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		select {
		case next <- k:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return first
}
