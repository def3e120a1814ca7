package capacity

import (
	"context"
	"math"
	"sync"
)

// Curves caches capacity curves — a fleet's MaxRate as a function of its
// size — keyed by whatever identifies the fleet to its caller (quantised
// parameters, token mix, SLO, attainment). Sizes that are powers of two
// are computed, as they are first needed; sizes between them are
// interpolated linearly (capacity grows with the fleet, and faster than
// linearly where the router pools; a chord under-estimates such a curve,
// never over-estimates it beyond the search's resolution).
//
// A synchronous cache (workers 0) computes what a lookup needs before it
// returns, so that a simulation stays deterministic. An asynchronous one
// never blocks a lookup: a missing point is queued for its workers and the
// lookup says it has no answer yet; the caller sizes with its fast path
// meanwhile (the engine: the queueing model). With workers < 0 nothing
// computes the queued points: Missing lists them and Preset fills them (a
// curve computed elsewhere, or saved). The cache holds at most maxEntries
// curves, and the queue at most queueLength points (a point not queued
// because the queue was full is asked for again by the next lookup).
type Curves[K comparable] struct {
	set      Settings
	max      int
	mu       sync.Mutex
	ready    *sync.Cond // signals queued points to the workers
	entries  map[K]*curve
	clock    uint64
	sync     bool
	queue    []job[K]
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	computed int
}

type curve struct {
	fleet   func(n int) *Fleet
	p       float64
	points  map[int]float64 // powers of two → MaxRate
	pending map[int]bool
	err     error
	used    uint64
}

type job[K comparable] struct {
	key K
	c   *curve
	n   int
}

// queueLength bounds an asynchronous cache's queue of points to compute.
const queueLength = 4096

// NewCurves returns a cache of at most maxEntries curves whose points are
// computed with set, by workers goroutines (0: synchronously, by the
// lookups themselves; < 0: by no one, see Missing). Close stops the
// workers.
func NewCurves[K comparable](set Settings, workers, maxEntries int) *Curves[K] {
	ctx, cancel := context.WithCancel(context.Background()) //nolint:gosec // G118: Close calls it
	c := &Curves[K]{set: set, max: max(maxEntries, 1), entries: map[K]*curve{}, ctx: ctx, cancel: cancel, sync: workers == 0}
	c.ready = sync.NewCond(&c.mu)
	for range max(workers, 0) {
		c.wg.Add(1)
		go c.work()
	}
	return c
}

// Close stops an asynchronous cache's workers (a point being computed is
// abandoned) and waits for them.
func (c *Curves[K]) Close() {
	c.cancel()
	c.mu.Lock()
	c.ready.Broadcast()
	c.mu.Unlock()
	c.wg.Wait()
}

// Point is one point of a curve: the capacity of N replicas of the fleet
// Key names.
type Point[K comparable] struct {
	Key K
	N   int
}

// Missing lists the queued points, oldest first.
func (c *Curves[K]) Missing() []Point[K] {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Point[K], 0, len(c.queue))
	for _, j := range c.queue {
		out = append(out, Point[K]{Key: j.key, N: j.n})
	}
	return out
}

// Preset records the capacity of n replicas (a power of two) of the fleet
// key names, computed elsewhere or saved, and takes it off the queue.
func (c *Curves[K]) Preset(key K, fleet func(n int) *Fleet, p float64, n int, rate float64) {
	c.mu.Lock()
	e := c.entries[key]
	if e == nil {
		c.evict()
		e = &curve{fleet: fleet, p: p, points: map[int]float64{}, pending: map[int]bool{}}
		c.entries[key] = e
	}
	for i, j := range c.queue {
		if j.c == e && j.n == n {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			break
		}
	}
	delete(e.pending, n)
	e.points[n] = rate
	c.mu.Unlock()
}

// Computed is how many points the cache has computed.
func (c *Curves[K]) Computed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.computed
}

// At is the capacity of n ≥ 1 replicas of the fleet key names at
// attainment p (fleet(n) builds it), and whether it is known. The
// synchronous cache computes what it lacks (ok is false only when the
// model fails: err says why); the asynchronous one queues it.
func (c *Curves[K]) At(key K, fleet func(n int) *Fleet, p float64, n int) (rate float64, ok bool, err error) {
	if n < 1 {
		return 0, true, nil
	}
	return c.at(key, c.lookup(key, fleet, p), n)
}

// at is At on the curve e of key (lookup's).
func (c *Curves[K]) at(key K, e *curve, n int) (rate float64, ok bool, err error) {
	if n < 1 {
		return 0, true, nil
	}
	n = min(n, MaxReplicas)
	lo := 1
	for lo*2 <= n {
		lo *= 2
	}
	hi := lo
	if lo < n {
		hi = lo * 2
	}
	rlo, okLo, err := c.point(key, e, lo)
	if err != nil || !okLo {
		return 0, false, err
	}
	if hi == lo {
		return rlo, true, nil
	}
	if hi > MaxReplicas {
		// Beyond the largest fleet the model runs: per replica as at lo.
		return rlo * float64(n) / float64(lo), true, nil
	}
	rhi, okHi, err := c.point(key, e, hi)
	if err != nil || !okHi {
		return 0, false, err
	}
	return rlo + (rhi-rlo)*float64(n-lo)/float64(hi-lo), true, nil
}

// Fewest is the fewest replicas, between 1 and maxN, whose capacity covers
// demand, with that capacity; ok is false while a point it needs is not
// known (asynchronous), and n is maxN when none covers it.
func (c *Curves[K]) Fewest(key K, fleet func(n int) *Fleet, p float64, demand float64, maxN int) (n int, rate float64, ok bool, err error) {
	maxN = max(1, min(maxN, MaxReplicas))
	// One lookup of the curve for the whole search: its key is large
	// (hashed at every map access) and the map is shared.
	cv := c.lookup(key, fleet, p)
	at := func(k int) (float64, bool) {
		r, known, e := c.at(key, cv, k)
		if e != nil {
			err = e
		}
		return r, known && e == nil
	}
	// Powers of two up to the first that covers the demand.
	hi := 1
	r, known := at(hi)
	for known && r < demand && hi < maxN {
		hi = min(hi*2, maxN)
		r, known = at(hi)
	}
	if !known {
		return 0, 0, false, err
	}
	if r < demand || hi == 1 {
		return hi, r, true, nil
	}
	lo := hi/2 + 1
	for lo < hi {
		mid := (lo + hi) / 2
		rm, k := at(mid)
		if !k {
			return 0, 0, false, err
		}
		if rm >= demand {
			hi, r = mid, rm
		} else {
			lo = mid + 1
		}
	}
	return hi, r, true, nil
}

// lookup returns the curve of key, made (fleet builds its fleets, p its
// attainment) when the cache has none, and marks it used.
func (c *Curves[K]) lookup(key K, fleet func(n int) *Fleet, p float64) *curve {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	e := c.entries[key]
	if e == nil {
		c.evict()
		e = &curve{fleet: fleet, p: p, points: map[int]float64{}, pending: map[int]bool{}}
		c.entries[key] = e
	}
	e.used = c.clock
	return e
}

// point is the capacity of n (a power of two) replicas on the curve e of
// key. A curve evicted meanwhile still answers (and computes) for this
// call; the cache no longer keeps it.
func (c *Curves[K]) point(key K, e *curve, n int) (float64, bool, error) {
	c.mu.Lock()
	if r, ok := e.points[n]; ok {
		c.mu.Unlock()
		return r, true, nil
	}
	if e.err != nil {
		err := e.err
		c.mu.Unlock()
		return 0, false, err
	}
	if c.sync {
		c.mu.Unlock()
		r, err := MaxRate(c.ctx, e.fleet(n), e.p, c.set)
		c.store(e, n, r, err)
		return r, err == nil, err
	}
	if !e.pending[n] && len(c.queue) < queueLength {
		c.queue = append(c.queue, job[K]{key: key, c: e, n: n})
		e.pending[n] = true
		c.ready.Signal()
	}
	c.mu.Unlock()
	return 0, false, nil
}

func (c *Curves[K]) store(e *curve, n int, r float64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(e.pending, n)
	if c.ctx.Err() != nil {
		return
	}
	if err != nil {
		e.err = err
		return
	}
	e.points[n] = r
	c.computed++
}

// evict drops the least recently used curve when the cache is full.
func (c *Curves[K]) evict() {
	if len(c.entries) < c.max {
		return
	}
	var oldest K
	least := uint64(math.MaxUint64)
	for k, e := range c.entries {
		if e.used < least {
			oldest, least = k, e.used
		}
	}
	delete(c.entries, oldest)
}

func (c *Curves[K]) work() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && c.ctx.Err() == nil {
			c.ready.Wait()
		}
		if c.ctx.Err() != nil {
			c.mu.Unlock()
			return
		}
		j := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		r, err := MaxRate(c.ctx, j.c.fleet(j.n), j.c.p, c.set)
		c.store(j.c, j.n, r, err)
	}
}
