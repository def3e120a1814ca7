package server

import (
	"fmt"
	"slices"
)

// CheckKV verifies the KV cache's invariants (for tests): every block's
// reference count is the number of running requests holding it; the free
// list holds exactly the unreferenced blocks; a running request's blocks
// cover its computed and scheduled tokens and no more than one block
// beyond; a shared-prefix index entry names a block with that content.
func (s *Server) CheckKV() error {
	c := s.kv
	refs := make([]int32, len(c.blocks))
	for _, q := range s.running {
		slots := q.computed + q.sched
		if len(q.blocks) != c.blocksFor(slots) {
			return fmt.Errorf("request %d: %d blocks for %d token slots", q.ID, len(q.blocks), slots)
		}
		for _, b := range q.blocks {
			refs[b]++
		}
	}
	free := 0
	for p := c.freeHead; p != c.freeTail; p++ {
		e := c.free[c.slot(p)]
		if e == freeStale {
			continue
		}
		b := e &^ freeShared
		free++
		if refs[b] != 0 || !c.blocks[b].free() || c.blocks[b].pos != p {
			return fmt.Errorf("block %d on the free list with %d holders", b, refs[b])
		}
		if shared := c.blocks[b].key&prefixBit != 0; shared != (e&freeShared != 0) {
			return fmt.Errorf("block %d on the free list flagged shared %t", b, !shared)
		}
	}
	if free != c.nFree {
		return fmt.Errorf("free list of %d blocks, counted %d", free, c.nFree)
	}
	for b := range c.blocks {
		if c.blocks[b].ref != refs[b] {
			return fmt.Errorf("block %d has ref %d, %d holders", b, c.blocks[b].ref, refs[b])
		}
	}
	for k, b := range c.byPrefix {
		if c.blocks[b].key != k {
			return fmt.Errorf("prefix index names block %d for content it does not hold", b)
		}
	}
	return c.checkHead()
}

// checkHead verifies the head's memo against a fresh walk.
func (c *kvCache) checkHead() error {
	m := &c.head
	if m.q == nil {
		return nil
	}
	hits := c.walkPrefix(m.q, nil)
	freeHits := 0
	for _, b := range hits {
		if c.blocks[b].free() {
			freeHits++
		}
	}
	if !slices.Equal(hits, m.hits) || freeHits != m.freeHits {
		return fmt.Errorf("request %d: memo of %d cached blocks (%d free), %d (%d free) resident",
			m.q.ID, len(m.hits), m.freeHits, len(hits), freeHits)
	}
	return nil
}

// CheckWaiting verifies the waiting queue's invariants (for tests): the
// waiting requests counted by priority add up to the queue, and under
// priority-fcfs the queue is in its order.
func (s *Server) CheckWaiting() error {
	n := 0
	for _, w := range s.waits {
		n += w.Count
	}
	if n != s.QueueLen() {
		return fmt.Errorf("%d waiting by priority, queue %d", n, s.QueueLen())
	}
	if !s.priority {
		return nil
	}
	for i := s.head + 1; i < len(s.waiting); i++ {
		if runsBefore(s.waiting[i], s.waiting[i-1]) {
			return fmt.Errorf("waiting queue out of order at %d", i)
		}
	}
	return nil
}
